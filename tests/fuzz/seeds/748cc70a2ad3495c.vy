(program e (workgroup 1)
  (buffer o u32 write 1)
  (param a f32)
  (store o 0u32 (bitcast u32 a)))
