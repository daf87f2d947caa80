(program b (workgroup 1)
  (buffer o u32 write)
  (if 1u32
    (then (store o 0u32 0x1.8p+0f32))))
