(program prog_c (workgroup 2)
  (buffer b0 u32 read_write)
  (buffer b1 u64 read_write)
  (buffer b2 i32 write)
  (buffer b3 f64 read 126)
  (let gi (add (add (gid x) (mul (gid y) (mul (wgsize x) (ngroups x)))) (mul (gid z) (mul (mul (wgsize x) (ngroups x)) (mul (wgsize y) (ngroups y))))))
  (if (lor (lnot (eq true (and true false))) false)
    (then
      (for i4 2u64 6u64 1u64
        (atomic xor b0 (load b2 gi) (div (max gi (select false (lid x) 9u32)) (cast u32 (load b3 gi))))
        (let v5 (fma (select false (load b3 5u32) 0x1.8p+0f64) (ceil (load b3 (lid x))) (load b3 (max -1151538841i32 202465051i32)))))
      (store b2 gi (max (load b2 (bitcast i32 gi)) (abs (or (sub (load b2 (cast i32 gi)) (load b2 (cast i32 gi))) (cast i32 9223372036854775807i64)))))
      (return)))
  (store b1 gi (mulhi (bitcast u64 (mulhi (cast u64 65i64) (select true (load b1 (bitcast i32 gi)) (load b1 (cast i32 gi))))) (load b1 (bitcast i32 gi)))))
