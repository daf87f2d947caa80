(program e (workgroup 1)
  (buffer o f32 write 1)
  (param x f32)
  (let r (sqrt x)))
