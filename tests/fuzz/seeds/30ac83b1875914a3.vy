(program e (workgroup 1)
  (buffer o f32 write 1)
  (param a i32)
  (store o 0u32 (cast f32 a)))
