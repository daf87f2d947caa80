(program pi (workgroup 1)
  (buffer o i32 write 1)
  (param n i32)
  (store o 0u32 n))
