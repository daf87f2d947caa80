(program e (workgroup 1)
  (buffer o i32 write 1)
  (param a bool)
  (store o 0u32 (cast i32 a)))
