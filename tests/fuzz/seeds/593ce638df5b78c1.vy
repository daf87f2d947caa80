(program auto (workgroup 1)
  (buffer o u32 write)
  (let _v1 (add (gid x) 1u32))
  (store o _v1 _v1))
