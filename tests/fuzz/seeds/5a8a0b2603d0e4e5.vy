(program e (workgroup 1)
  (buffer o bool write 1)
  (param a bool)
  (store o 0u32 (lnot a)))
