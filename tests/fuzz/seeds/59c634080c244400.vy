(program cnt (workgroup 4)
  (buffer x u32 read)
  (buffer c u32 read_write 1)
  (atomic add c 0u32 1u32))
