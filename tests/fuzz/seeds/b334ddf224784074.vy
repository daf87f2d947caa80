(program e (workgroup 1)
  (buffer o bool write 1)
  (param a f64)
  (store o 0u32 (cast bool a)))
