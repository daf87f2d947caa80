(program ub (workgroup 64)
  (param n u32)
  (if (lt (wgid x) n)
    (then (barrier))))
