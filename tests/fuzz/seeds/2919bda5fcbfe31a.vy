(program e (workgroup 1)
  (buffer o f32 write 1)
  (param f f32)
  (let r (add f 0x1p+24f32)))
