(program a (workgroup 8 4))
