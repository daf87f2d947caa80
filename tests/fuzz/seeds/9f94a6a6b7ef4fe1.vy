(program b (workgroup 64)
  (shared s u32 64)
  (if (lt (gid x) 3u32)
    (then (barrier))))
