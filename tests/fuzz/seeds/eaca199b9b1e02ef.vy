(program b (workgroup 64)
  (let i (gid x))
  (let c (lt i 3u32))
  (if c
    (then (barrier))))
