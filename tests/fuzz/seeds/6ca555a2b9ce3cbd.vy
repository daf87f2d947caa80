(program count (workgroup 256)
  (buffer c u32 read_write)
  (atomic add c 0u32 1u32))
