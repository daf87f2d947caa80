(program e (workgroup 1)
  (buffer o f64 write 1)
  (param a u64)
  (store o 0u32 (cast f64 a)))
