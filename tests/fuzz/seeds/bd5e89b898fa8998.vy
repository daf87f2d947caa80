(program prog_11 (workgroup 32)
  (buffer b0 f32 write)
  (buffer b1 u32 write)
  (param p2 i64)
  (param p3 f64)
  (param p4 f32)
  (let gi (add (add (gid x) (mul (gid y) (mul (wgsize x) (ngroups x)))) (mul (gid z) (mul (mul (wgsize x) (ngroups x)) (mul (wgsize y) (ngroups y))))))
  (if (eq (eq (div (add -0x1p+0f64 p3) (round p3)) -inff64) false)
    (then
      (if (lt p2 p2)
        (then
          (let v5 p4)
          (set v5 v5)
          (store b1 gi (max (wgid y) (bitcast u32 (max (select true (cast f32 false) (load b0 (bitcast i32 gi))) -inff32)))))
        (else
          (let v6 (load b0 (bitcast i32 gi)))
          (let v7 (fma 0x1p+3f64 (cast f64 v6) (cast f64 (round (select false p3 p3)))))))
      (let v8 -2147483648i32))
    (else
      (if (le (mulhi (sub (shr (len b1) (ngroups x)) (cast u32 true)) (brev (or (wgid z) (wgid y)))) (min (wgsize x) (cast u32 (shr 4294967295u64 13u64))))
        (then
          (store b1 gi gi)
          (store b0 (bitcast i32 gi) (load b0 (bitcast i32 gi)))))))
  (store b1 gi (wgid y)))
