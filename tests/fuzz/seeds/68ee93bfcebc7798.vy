(program e (workgroup 1)
  (buffer o i32 write 1)
  (param a u32)
  (store o 0u32 (cast i32 a)))
