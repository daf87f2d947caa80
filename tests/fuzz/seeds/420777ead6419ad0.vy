(program ids (workgroup 2 2)
  (buffer o u32 write 16)
  (let flat (add (gid x) (mul (gid y) (mul (wgsize x) (ngroups x)))))
  (store o flat (add (mul (wgid y) 100u32) (add (mul (lid y) 10u32) (lid x)))))
