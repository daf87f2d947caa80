(program bad (workgroup 1)
  (buffer o u32 write)
  (store o 0u32 0x1.8p+0f32))
