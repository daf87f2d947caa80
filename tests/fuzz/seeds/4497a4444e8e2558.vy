(program nosize (workgroup 4)
  (buffer o u32 write)
  (store o 0u32 1u32))
