(program e (workgroup 1)
  (buffer o u32 write 1)
  (param a u32)
  (store o 0u32 (popcount a)))
