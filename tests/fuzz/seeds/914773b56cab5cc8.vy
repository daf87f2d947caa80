(program e (workgroup 1)
  (buffer o i32 write 1)
  (param a i32)
  (store o 0u32 (abs a)))
