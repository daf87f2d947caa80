(program prog_e (workgroup 2)
  (buffer b0 u64 write 89)
  (let gi (add (add (gid x) (mul (gid y) (mul (wgsize x) (ngroups x)))) (mul (gid z) (mul (mul (wgsize x) (ngroups x)) (mul (wgsize y) (ngroups y))))))
  (if (eq (cast bool (lt (add -0x1.cp+2f64 nan:0x7ff8000000000000f64) -inff64)) false)
    (then (return))
    (else (store b0 -1i32 (load b0 (cast i32 gi)))))
  (let a1 (atomic or b0 gi (and (load b0 (bitcast i32 gi)) (load b0 -1i32))))
  (let a2 (atomic max b0 gi (cast u64 (select (eq 0u32 gi) gi (not (len b0))))))
  (set a1 (shl a2 a1))
  (store b0 (bitcast i32 gi) (abs (load b0 gi)))
  (for i3 0u64 3u64 1u64
    (store b0 (cast i32 gi) (sub i3 (cast u64 (bitcast i64 (max (select false -0x1p+2f64 -0x1.8p+3f64) -inff64)))))
    (let v4 (select (or false true) (load b0 gi) (mulhi (load b0 (add gi (len b0))) (load b0 (bitcast i32 gi)))))
    (set a1 v4))
  (if (lt 0x0p+0f64 0x1.1128b6d98932cp-227f64)
    (then
      (if true
        (then
          (store b0 4294967295u32 (shr a1 a2))
          (let a5 (atomic add b0 4294967295u32 (load b0 gi)))))
      (store b0 gi (load b0 (add gi (len b0))))
      (let v6 (wgid x))))
  (store b0 -1i32 (sub 9223372036854775808u64 (load b0 (cast i32 gi)))))
