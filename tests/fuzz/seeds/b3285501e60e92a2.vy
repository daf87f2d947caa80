(program e (workgroup 1)
  (buffer o u32 write 1)
  (param a i32)
  (store o 0u32 (bitcast u32 a)))
