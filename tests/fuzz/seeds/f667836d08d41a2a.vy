(program w (workgroup 2048))
