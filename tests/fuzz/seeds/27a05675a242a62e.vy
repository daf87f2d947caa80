(program b (workgroup 8 1 2))
