(program e (workgroup 1)
  (buffer o i64 write 1)
  (param a f64)
  (store o 0u32 (cast i64 a)))
