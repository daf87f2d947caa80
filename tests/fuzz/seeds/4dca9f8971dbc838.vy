(program prog_10 (workgroup 32)
  (buffer b0 i64 read)
  (buffer b1 u32 write)
  (buffer b2 u32 write)
  (buffer b3 f32 read_write 150)
  (param p4 u64)
  (param p5 u64)
  (param p6 f32)
  (let gi (add (add (gid x) (mul (gid y) (mul (wgsize x) (ngroups x)))) (mul (gid z) (mul (mul (wgsize x) (ngroups x)) (mul (wgsize y) (ngroups y))))))
  (let v7 (eq (eq (mulhi (load b0 (rem (wgsize z) (len b0))) (select true (load b0 (bitcast i32 gi)) (load b0 6u32))) (load b0 gi)) false))
  (store b3 (cast i32 gi) (neg (select true (fma inff32 (load b3 gi) (bitcast f32 -2147483648i32)) (load b3 gi))))
  (let v8 (fma (sub (div nan:0x7fc00000f32 (round (load b3 gi))) (load b3 gi)) (cast f32 31u32) (load b3 gi)))
  (if v7
    (then
      (store b1 gi (load b1 (cast i32 gi)))
      (if (lt (cast i64 (cast u32 (shl (load b0 5u32) (load b0 (len b1))))) (load b0 -1i32))
        (then
          (for i9 -1i32 1i32 1i32 (store b2 (bitcast i32 gi) (wgid y)))
          (if (lnot v7)
            (then
              (if (le (xor (rem 255u32 65536u32) gi) (select (eq (eq false v7) v7) (add gi (gid y)) (lid x)))
                (then (let v10 (min (select (xor v7 (ge -0x1.cp+2f64 -0x1.4p+2f64)) (clz (select v7 2147483647i32 12i32)) 0i32) (add (sub (sub 12i32 32i32) (select true 2i32 5i32)) (cast i32 (lid y))))))
                (else (return)))
              (let v11 false)
              (store b1 (cast i32 gi) (rem (cast u32 (max p6 (bitcast f32 (load b3 gi)))) (add (shl (brev gi) (ngroups x)) gi))))
            (else
              (if (ne (sub (round (select v7 (load b3 (cast i32 gi)) p6)) (cast f32 (lid y))) (load b3 (add gi (len b3))))
                (then
                  (atomic exchange b2 (add gi (len b2)) (min (load b2 (cast i32 gi)) (wgsize z)))
                  (store b1 -1i32 (select v7 gi (div (select true (bitcast u32 1635656933i32) (load b2 (bitcast i32 gi))) (load b1 (cast i32 gi)))))
                  (let v12 (add (lid x) (mul (mulhi (sub gi gi) (mul (len b3) gi)) (bitcast u32 (max (load b3 (cast i32 gi)) -inff32))))))
                (else
                  (set v8 (sub (sqrt (trunc (bitcast f32 0x1p+2f32))) (load b3 (bitcast i32 gi))))
                  (let v13 (sub 5u32 (shl (wgsize y) (gid z))))))))
          (let a14 (atomic sub b2 gi (select (land (lnot v7) true) (div (cast u32 v8) (wgid x)) (popcount (bitcast u32 (wgid y)))))))
        (else
          (store b3 (add gi (len b3)) (floor (mul -0x1.8p+0f32 (load b3 (cast i32 gi)))))
          (if (gt (fma -0x1.ep+3f64 (cast f64 (trunc nan:0xfff8000000000001f64)) 0x1.8p+0f64) (mul (bitcast f64 9223372036854775807u64) -0x1.d1fe2ff6782efp+201f64))
            (then
              (let a15 (atomic sub b2 gi (bitcast u32 (shl (mul (gid z) (load b2 gi)) (rem gi (ngroups y))))))
              (let a16 (atomic and b1 gi (abs (min (cast u32 2147483647i32) (add (gid x) (load b2 gi)))))))
            (else (store b3 (bitcast i32 gi) (add (bitcast f32 (div (min (lid x) (len b0)) gi)) -0x0p+0f32))))))
      (if (lor true v7)
        (then
          (let v17 (select (lnot (lt (select v7 (load b0 gi) (load b0 (len b0))) (and (load b0 4294967295u32) (load b0 (add gi 3u32))))) 0x1p-1022f64 (round 0x1.2p+3f64)))
          (atomic and b1 (bitcast i32 gi) (load b2 (cast i32 gi)))
          (store b3 gi (load b3 (bitcast i32 gi)))))))
  (store b1 gi (load b2 gi))
  (atomic and b1 (add gi (len b1)) (cast u32 gi))
  (store b3 gi (fma (sqrt (load b3 gi)) (trunc (mul (abs p6) (load b3 gi))) (round (sqrt (fma (load b3 (bitcast i32 gi)) (load b3 (bitcast i32 gi)) (load b3 (bitcast i32 gi)))))))
  (store b1 gi (select (gt (brev gi) (cast u32 (select true 11i32 2i32))) gi (lid z))))
