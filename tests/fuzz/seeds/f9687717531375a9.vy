(program e (workgroup 1)
  (buffer o u32 write 1)
  (param a i64)
  (store o 0u32 (cast u32 a)))
