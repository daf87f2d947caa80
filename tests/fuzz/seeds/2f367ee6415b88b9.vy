(program e (workgroup 1)
  (buffer o f32 write 1)
  (param a f32)
  (store o 0u32 (floor a)))
