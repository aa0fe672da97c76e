"""A matrix product of our own in LLVM IR: `module_ir(dtype, shape)` writes C = A @ B for
this host's vector width, `workspace_bytes` sizes its packing buffer.

The exported function (`symbol(dtype)`) is
`void f(i64 m, i64 n, i64 k, ptr a, i64 rsa, i64 csa, ptr b, i64 rsb, i64 csb, ptr c,
i64 ldc, ptr work)`: A[i, p] is at a[i * rsa + p * csa], B[p, j] at b[p * rsb + j * csb]
(strides in elements: row-major, transposed and strided operands alike), C row-major with
leading dimension ldc, and `work` at least `workspace_bytes(m, n, k, dtype)` bytes of the
caller's (so calls in several threads at once share nothing). Any m, n, k >= 1.

The method is the usual one of BLAS libraries: k is cut into blocks of at most KC, m and n
into blocks of at most MC and NC (sizes the caches hold); a block of B is copied into the
buffer as panels of NR columns (row after row of a panel contiguous), a block of A as panels
of MR rows (column after column contiguous), both padded with zeros to whole panels; a
micro-kernel then computes each MR x NR tile of C in registers (MR * NR / W accumulators
of W lanes, fused multiply-adds of a broadcast element of A by vectors of B) over one
k-block, and adds it into C (the first k-block stores it). The padding only ever meets
padding (a row of A's padding makes a row of the tile that is never stored), so every
stored element is a plain sum of products, NaN and infinities propagating as they do in
BLAS (0 * inf is NaN), accumulated from +0.0 as BLAS does (a sum of -0.0 products is
+0.0).
"""

from __future__ import annotations

import numpy as np

GEMM_PREFIX = "autodiff.gemm."


class Shape:
    """The blocking of one host: `bits` of a vector register; the micro-tile (MR rows,
    NR = NV vectors of columns: MR * NV accumulators, NV vectors of B and a broadcast of A
    within the host's registers) and the cache blocks; `fma`, the intrinsic of the
    multiply-adds ("fmuladd" where the host has no fused one: a multiply and an add, not
    the C library's `fma` called per element)."""

    def __init__(self, name: str, bits: int, tile: tuple, blocks: tuple, fma: str = "fma"):
        self.name, self.bits, self.fma = name, bits, fma
        self.mr, self.nv = tile
        self.kc, self.mc, self.nc = blocks

    def lanes(self, itemsize: int) -> int:
        return self.bits // (8 * itemsize)

    def nr(self, itemsize: int) -> int:
        return self.nv * self.lanes(itemsize)


# (kc, mc, nc in elements of float64; float32's blocks hold twice the elements in k)
SHAPES = {
    "avx512": Shape("avx512", 512, (8, 3), (256, 192, 1536)),
    "avx2": Shape("avx2", 256, (6, 2), (256, 144, 1536)),
    "sse2": Shape("sse2", 128, (4, 2), (256, 96, 1024), fma="fmuladd"),
}


def host_shape(features: str) -> Shape:
    """The blocking for a host of LLVM's `features` ("+avx512f,+fma,..."): AVX-512's 32
    registers of 512 bits, AVX2's 16 of 256 (with FMA), else SSE2's."""
    have = set(features.split(","))
    if "+avx512f" in have:
        return SHAPES["avx512"]
    if "+avx2" in have and "+fma" in have:
        return SHAPES["avx2"]
    return SHAPES["sse2"]


def symbol(dtype) -> str:
    """The name the exported function of `dtype` has (bound by module.py)."""
    return GEMM_PREFIX + ("f64" if np.dtype(dtype) == np.float64 else "f32")


def slot_symbol(dtype) -> str:
    """The name of the pointer to the kernel of `dtype` that modules read before calling it
    (null until it is compiled: module.py compiles it in the background, and a module calls
    NumPy's BLAS meanwhile)."""
    return symbol(dtype) + ".slot"


# Products up to this many multiply-adds use the kernel: beyond, NumPy's BLAS, which runs
# them in several threads (the kernel runs in the caller's one).
KERNEL_MAX_WORK = 1 << 30


def suits(m: int, n: int, k: int) -> bool:
    """Is the kernel the one for a product of (m, k) by (k, n) (else NumPy's BLAS)? Not
    for a single row (BLAS's matrix-vector product, the kernel's tile mostly padding) nor
    for a few columns (the tile's vectors run along n: fewer columns than a few vectors'
    lanes leave them mostly idle)."""
    return m >= 2 and n >= 16 and m * n * k <= KERNEL_MAX_WORK


def _split(total: int, block: int, multiple: int = 1) -> int:
    """The block size cutting `total` into the fewest blocks of at most `block`, as even as
    possible, rounded up to a multiple of `multiple`."""
    count = -(-total // block)
    size = -(-total // count)
    return -(-size // multiple) * multiple


def _blocks(shape: Shape, m: int, n: int, k: int, itemsize: int) -> tuple:
    scale = 8 // itemsize
    mr, nr = shape.mr, shape.nr(itemsize)
    kc = _split(k, shape.kc * scale)
    mc = _split(m, shape.mc, mr)
    nc = _split(n, shape.nc, nr)
    return kc, mc, nc


def workspace_bytes(m: int, n: int, k: int, dtype) -> int:
    """Bytes of the buffer the product of (m, k) by (k, n) needs, on any host (the largest
    of the shapes'), alignment slack included."""
    itemsize = np.dtype(dtype).itemsize
    sizes = []
    for shape in SHAPES.values():
        kc, mc, nc = _blocks(shape, m, n, k, itemsize)
        sizes.append((kc * mc + 16 + kc * nc) * itemsize + 64)
    return max(sizes)


class _Writer:
    """Lines of one function: fresh names, blocks, counted loops (counters in allocas,
    which LLVM's SROA turns into registers; not unrolled: `metadata`, the module's list of
    loop metadata, gets each loop's)."""

    def __init__(self, metadata: list):
        self.lines: list = []
        self.allocas: list = []
        self.count = 0
        self.metadata = metadata

    def new(self, prefix: str = "t") -> str:
        self.count += 1
        return f"%{prefix}{self.count}"

    def emit(self, text: str) -> None:
        self.lines.append("  " + text)

    def value(self, text: str) -> str:
        name = self.new()
        self.emit(f"{name} = {text}")
        return name

    def block(self, label: str) -> None:
        self.lines.append(f"{label}:")

    def label(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def loop(self, start: str, end: str, step: int | str, body) -> None:
        """for i in range(start, end, step): body(i); start < end is not assumed."""
        counter = self.new("i")
        self.allocas.append(f"  {counter} = alloca i64")
        self.emit(f"store i64 {start}, ptr {counter}")
        head, inner, done = self.label("head"), self.label("body"), self.label("done")
        self.emit(f"br label %{head}")
        self.block(head)
        i = self.value(f"load i64, ptr {counter}")
        more = self.value(f"icmp slt i64 {i}, {end}")
        self.emit(f"br i1 {more}, label %{inner}, label %{done}")
        self.block(inner)
        body(i)
        self.emit(f"store i64 {self.value(f'add i64 {i}, {step}')}, ptr {counter}")
        # (unrolled, the copies and edges would cost compile time, not run time)
        node = f"!{len(self.metadata) + 1}"
        self.metadata.append(f"{node} = distinct !{{{node}, !0}}")
        self.emit(f"br label %{head}, !llvm.loop {node}")
        self.block(done)

    def branch(self, condition: str, then, otherwise) -> None:
        yes, no, join = self.label("yes"), self.label("no"), self.label("join")
        self.emit(f"br i1 {condition}, label %{yes}, label %{no}")
        self.block(yes)
        then()
        self.emit(f"br label %{join}")
        self.block(no)
        otherwise()
        self.emit(f"br label %{join}")
        self.block(join)

    def min(self, a: str, b: str) -> str:
        return self.value(f"call i64 @llvm.smin.i64(i64 {a}, i64 {b})")

    def function(self, head: str) -> str:
        return "\n".join([head + " {", "entry:", *self.allocas, *self.lines, "  ret void", "}"])


class _Generator:
    """The functions of one dtype's module: the micro-kernel, the two packings, the driver
    (the exported function) looping over the blocks and tiles."""

    def __init__(self, dtype, shape: Shape):
        itemsize = np.dtype(dtype).itemsize
        self.t = "double" if itemsize == 8 else "float"
        self.size = itemsize
        self.w = shape.lanes(itemsize)
        self.mr, self.nv, self.nr = shape.mr, shape.nv, shape.nr(itemsize)
        self.vec = f"<{self.w} x {self.t}>"
        self.shape = shape
        self.prefix = f"{GEMM_PREFIX}{self.t}."
        self.attrs = f'nounwind "min-legal-vector-width"="{shape.bits}"'
        self.fma = f"@llvm.{shape.fma}.v{self.w}f{itemsize * 8}"
        self.metadata: list = ['!0 = !{!"llvm.loop.unroll.disable"}']

    def gep(self, f: _Writer, ptr: str, offset: str) -> str:
        return f.value(f"getelementptr inbounds {self.t}, ptr {ptr}, i64 {offset}")

    # ---- the micro-kernel ----
    def kernel(self, nv: int) -> str:
        """kern<nv>(kc, ap, bp, c, ldc, add, mr, nr): the MR x (nv vectors) tile at c (+)=
        A-panel @ B-panel over kc; only its first mr rows and nr columns are stored. (A
        kernel of fewer vectors than NV for the last panel of columns: a panel mostly of
        padding is not multiplied.)"""
        f, mr, w, vec, t = _Writer(self.metadata), self.mr, self.w, self.vec, self.t
        f.emit("br label %loop")
        f.block("loop")
        f.emit("%p = phi i64 [0, %entry], [%p1, %loop]")
        for i in range(mr):
            for v in range(nv):
                f.emit(f"%c{i}_{v} = phi {vec} [zeroinitializer, %entry], [%d{i}_{v}, %loop]")
        f.emit(f"%bo = mul i64 %p, {self.nr}")
        f.emit(f"%ao = mul i64 %p, {mr}")
        for v in range(nv):
            f.emit(f"%bq{v} = add i64 %bo, {v * w}")
            f.emit(f"%bp{v} = getelementptr inbounds {t}, ptr %bp, i64 %bq{v}")
            f.emit(f"%b{v} = load {vec}, ptr %bp{v}, align {self.size * w}")
        for i in range(mr):
            f.emit(f"%aq{i} = add i64 %ao, {i}")
            f.emit(f"%ap{i} = getelementptr inbounds {t}, ptr %ap, i64 %aq{i}")
            f.emit(f"%a{i} = load {t}, ptr %ap{i}, align {self.size}")
            f.emit(f"%ai{i} = insertelement {vec} poison, {t} %a{i}, i32 0")
            f.emit(
                f"%as{i} = shufflevector {vec} %ai{i}, {vec} poison, <{w} x i32> zeroinitializer"
            )
            for v in range(nv):
                f.emit(
                    f"%d{i}_{v} = call {vec} {self.fma}({vec} %as{i}, {vec} %b{v}, {vec} %c{i}_{v})"
                )
        f.emit("%p1 = add i64 %p, 1")
        f.emit("%more = icmp slt i64 %p1, %kc")
        f.emit("br i1 %more, label %loop, label %tile")
        f.block("tile")
        f.emit(f"%fullr = icmp eq i64 %mr, {mr}")
        f.emit(f"%fullc = icmp eq i64 %nr, {nv * w}")
        f.emit("%full = and i1 %fullr, %fullc")
        f.emit("br i1 %full, label %whole, label %part")
        f.block("whole")
        self._store_whole(f, nv)
        f.block("part")
        self._store_part(f, nv)
        head = (
            f'define internal void @"{self.prefix}kern{nv}"(i64 %kc, ptr noalias %ap, '
            f"ptr noalias %bp, ptr noalias %c, i64 %ldc, i1 %add, i64 %mr, i64 %nr) "
            f"{self.attrs}"
        )
        return f.function(head)

    def _store_whole(self, f: _Writer, nv: int) -> None:
        vec, w = self.vec, self.w
        f.emit("br i1 %add, label %wadd, label %wset")
        for add in (True, False):
            f.block("wadd" if add else "wset")
            for i in range(self.mr):
                row = self.gep(f, "%c", f.value(f"mul i64 %ldc, {i}"))
                for v in range(nv):
                    ptr, value = self.gep(f, row, str(v * w)), f"%d{i}_{v}"
                    if add:
                        old = f.value(f"load {vec}, ptr {ptr}, align {self.size}")
                        value = f.value(f"fadd {vec} {old}, {value}")
                    f.emit(f"store {vec} {value}, ptr {ptr}, align {self.size}")
            f.emit("ret void")

    def _store_part(self, f: _Writer, nv: int) -> None:
        """The tile through a stack copy, its first mr x nr elements into C."""
        vec, w, t = self.vec, self.w, self.t
        f.allocas.append(f"  %tmp = alloca {t}, i64 {self.mr * self.nr}, align 64")
        for i in range(self.mr):
            for v in range(nv):
                ptr = self.gep(f, "%tmp", str(i * self.nr + v * w))
                f.emit(f"store {vec} %d{i}_{v}, ptr {ptr}, align {self.size}")

        def row(i):
            def column(j):
                src = self.gep(
                    f, "%tmp", f.value(f"add i64 {f.value(f'mul i64 {i}, {self.nr}')}, {j}")
                )
                dst = self.gep(f, "%c", f.value(f"add i64 {f.value(f'mul i64 {i}, %ldc')}, {j}"))
                x = f.value(f"load {t}, ptr {src}")
                old = f.value(f"load {t}, ptr {dst}")
                total = f.value(f"fadd {t} {old}, {x}")
                f.emit(f"store {t} {f.value(f'select i1 %add, {t} {total}, {t} {x}')}, ptr {dst}")

            f.loop("0", "%nr", 1, column)

        f.loop("0", "%mr", 1, row)

    # ---- packing ----
    def pack_b(self) -> str:
        """packb(kc, nc, b, rsb, csb, bp): B's kc x nc block as panels of NR columns."""
        f, nr = _Writer(self.metadata), self.nr

        def panel(j0):
            width = f.min(f.value(f"sub i64 %nc, {j0}"), str(nr))
            dst0 = self.gep(f, "%bp", f.value(f"mul i64 {j0}, %kc"))
            src0 = self.gep(f, "%b", f.value(f"mul i64 {j0}, %csb"))
            contiguous = f.value("icmp eq i64 %csb, 1")
            fast = f.value(f"and i1 {contiguous}, {f.value(f'icmp eq i64 {width}, {nr}')}")

            def rows(copy):
                def row(p):
                    src = self.gep(f, src0, f.value(f"mul i64 {p}, %rsb"))
                    copy(src, self.gep(f, dst0, f.value(f"mul i64 {p}, {nr}")))

                f.loop("0", "%kc", 1, row)

            def vectors(src, dst):
                for v in range(self.nv):
                    offset = str(v * self.w)
                    x = f.value(
                        f"load {self.vec}, ptr {self.gep(f, src, offset)}, align {self.size}"
                    )
                    f.emit(f"store {self.vec} {x}, ptr {self.gep(f, dst, offset)}, align 64")

            def elements(src, dst):
                self._strided(f, (src, "%csb", width), (dst, str(nr)))

            def other():
                if nr % 8:
                    rows(elements)
                    return
                full = f.value(f"icmp eq i64 {width}, {nr}")
                columns = f.value(f"and i1 {full}, {f.value('icmp eq i64 %rsb, 1')}")
                transpose = lambda: self._transpose(f, (src0, "%csb", nr), dst0)
                f.branch(columns, transpose, lambda: rows(elements))

            f.branch(fast, lambda: rows(vectors), other)

        f.loop("0", "%nc", nr, panel)
        head = (
            f'define internal void @"{self.prefix}packb"(i64 %kc, i64 %nc, ptr noalias %b, '
            f"i64 %rsb, i64 %csb, ptr noalias %bp) {self.attrs}"
        )
        return f.function(head)

    def _strided(self, f: _Writer, source: tuple, target: tuple) -> None:
        """dst[:count] = src[::stride][:count]; dst[count:total] = 0."""
        (src, stride, count), (dst, total), t = source, target, self.t

        def element(j):
            x = f.value(f"load {t}, ptr {self.gep(f, src, f.value(f'mul i64 {j}, {stride}'))}")
            f.emit(f"store {t} {x}, ptr {self.gep(f, dst, j)}")

        f.loop("0", count, 1, element)
        f.loop(count, total, 1, lambda j: f.emit(f"store {t} 0.0, ptr {self.gep(f, dst, j)}"))

    def pack_a(self) -> str:
        """packa(mc, kc, a, rsa, csa, ap): A's mc x kc block as panels of MR rows."""
        f, mr = _Writer(self.metadata), self.mr

        def panel(i0):
            height = f.min(f.value(f"sub i64 %mc, {i0}"), str(mr))
            dst0 = self.gep(f, "%ap", f.value(f"mul i64 {i0}, %kc"))
            src0 = self.gep(f, "%a", f.value(f"mul i64 {i0}, %rsa"))

            def general():
                def column(p):
                    src = self.gep(f, src0, f.value(f"mul i64 {p}, %csa"))
                    dst = self.gep(f, dst0, f.value(f"mul i64 {p}, {mr}"))
                    self._strided(f, (src, "%rsa", height), (dst, str(mr)))

                f.loop("0", "%kc", 1, column)

            def columns():  # (A's columns contiguous: a vector of MR elements each)
                vec = f"<{mr} x {self.t}>"

                def column(p):
                    src = self.gep(f, src0, f.value(f"mul i64 {p}, %csa"))
                    x = f.value(f"load {vec}, ptr {src}, align {self.size}")
                    dst = self.gep(f, dst0, f.value(f"mul i64 {p}, {mr}"))
                    f.emit(f"store {vec} {x}, ptr {dst}, align {self.size}")

                f.loop("0", "%kc", 1, column)

            def rows_or_general():
                if mr % 8:
                    general()
                    return
                rows = f.value(f"and i1 {full}, {f.value('icmp eq i64 %csa, 1')}")
                f.branch(rows, lambda: self._transpose(f, (src0, "%rsa", mr), dst0), general)

            full = f.value(f"icmp eq i64 {height}, {mr}")
            contiguous = f.value(f"and i1 {full}, {f.value('icmp eq i64 %rsa, 1')}")
            f.branch(contiguous, columns, rows_or_general)

        f.loop("0", "%mc", mr, panel)
        head = (
            f'define internal void @"{self.prefix}packa"(i64 %mc, i64 %kc, ptr noalias %a, '
            f"i64 %rsa, i64 %csa, ptr noalias %ap) {self.attrs}"
        )
        return f.function(head)

    def _transpose(self, f: _Writer, source: tuple, dst0: str) -> None:
        """dst0[p * count + r] = src0[r * stride + p] for p < kc, r < count (a multiple of
        8): `count` rows of contiguous elements into a panel, 8 rows at a time (a loop: one
        copy of the code whatever `count`), their 8 x 8 blocks transposed in registers
        (vector loads of rows, shuffles, vector stores of columns), the last kc % 8 columns
        element by element."""
        src0, stride, count = source
        t, vec = self.t, f"<8 x {self.t}>"
        whole = f.value("and i64 %kc, -8")

        def group(g):
            first = self.gep(f, src0, f.value(f"mul i64 {stride}, {g}"))
            rows = [self.gep(f, first, f.value(f"mul i64 {stride}, {r}")) for r in range(8)]
            dst1 = self.gep(f, dst0, g)

            def block(p):
                dst = self.gep(f, dst1, f.value(f"mul i64 {p}, {count}"))
                loads = [self.gep(f, row, p) for row in rows]
                columns = self._transpose8(
                    f, [f.value(f"load {vec}, ptr {x}, align {self.size}") for x in loads]
                )
                for q, column in enumerate(columns):
                    target = self.gep(f, dst, str(q * count))
                    f.emit(f"store {vec} {column}, ptr {target}, align {self.size}")

            def step(p):
                dst = self.gep(f, dst1, f.value(f"mul i64 {p}, {count}"))
                for r, row in enumerate(rows):
                    x = f.value(f"load {t}, ptr {self.gep(f, row, p)}")
                    f.emit(f"store {t} {x}, ptr {self.gep(f, dst, str(r))}")

            f.loop("0", whole, 8, block)
            f.loop(whole, "%kc", 1, step)

        f.loop("0", str(count), 8, group)

    def _transpose8(self, f: _Writer, rows: list) -> list:
        """The 8 columns of the 8 x 8 block whose rows are `rows` (<8 x T> values): three
        rounds of shuffles, each interleaving pairs of vectors at twice the distance."""
        vec = f"<8 x {self.t}>"
        masks = [
            ([0, 8, 2, 10, 4, 12, 6, 14], [1, 9, 3, 11, 5, 13, 7, 15]),
            ([0, 1, 8, 9, 4, 5, 12, 13], [2, 3, 10, 11, 6, 7, 14, 15]),
            ([0, 1, 2, 3, 8, 9, 10, 11], [4, 5, 6, 7, 12, 13, 14, 15]),
        ]
        values = list(rows)
        for level, (low, high) in enumerate(masks):
            distance, result = 1 << level, list(values)
            for i in range(8):
                if i & distance:
                    continue
                x, y = values[i], values[i + distance]
                for target, mask in ((i, low), (i + distance, high)):
                    text = ", ".join(f"i32 {m}" for m in mask)
                    result[target] = f.value(
                        f"shufflevector {vec} {x}, {vec} {y}, <8 x i32> <{text}>"
                    )
            values = result
        return values

    # ---- the driver ----
    def driver(self, name: str) -> str:
        f, p = _Writer(self.metadata), self.prefix
        kc_max, mc_max, nc_max = self._block_sizes(f)
        base = f.value("ptrtoint ptr %work to i64")
        aligned = f.value(f"and i64 {f.value(f'add i64 {base}, 63')}, -64")
        ap = f.value(f"inttoptr i64 {aligned} to ptr")
        # (B's panels 64-byte aligned too: the kernel loads them as aligned vectors)
        a_size = f.value(f"add i64 {f.value(f'mul i64 {mc_max}, {kc_max}')}, 15")
        bp = self.gep(f, ap, f.value(f"and i64 {a_size}, -16"))

        def jblock(jc):
            nc = f.min(f.value(f"sub i64 %n, {jc}"), nc_max)

            def kblock(pc):
                kc = f.min(f.value(f"sub i64 %k, {pc}"), kc_max)
                boff = f.value(
                    f"add i64 {f.value(f'mul i64 {pc}, %rsb')}, {f.value(f'mul i64 {jc}, %csb')}"
                )
                f.emit(
                    f'call void @"{p}packb"(i64 {kc}, i64 {nc}, ptr {self.gep(f, "%b", boff)}, '
                    f"i64 %rsb, i64 %csb, ptr {bp})"
                )
                add = f.value(f"icmp ne i64 {pc}, 0")

                def iblock(ic):
                    mc = f.min(f.value(f"sub i64 %m, {ic}"), mc_max)
                    rows, columns = f.value(f"mul i64 {ic}, %rsa"), f.value(f"mul i64 {pc}, %csa")
                    aoff = f.value(f"add i64 {rows}, {columns}")
                    f.emit(
                        f'call void @"{p}packa"(i64 {mc}, i64 {kc}, '
                        f"ptr {self.gep(f, '%a', aoff)}, i64 %rsa, i64 %csa, ptr {ap})"
                    )
                    self._tiles(f, (ic, jc, kc, mc, nc), (ap, bp, add))

                f.loop("0", "%m", mc_max, iblock)

            f.loop("0", "%k", kc_max, kblock)

        f.loop("0", "%n", nc_max, jblock)
        head = (
            f'define void @"{name}"(i64 %m, i64 %n, i64 %k, ptr noalias %a, i64 %rsa, '
            f"i64 %csa, ptr noalias %b, i64 %rsb, i64 %csb, ptr noalias %c, i64 %ldc, "
            f"ptr noalias %work) {self.attrs}"
        )
        return f.function(head)

    def _tiles(self, f: _Writer, sizes: tuple, buffers: tuple) -> None:
        ic, jc, kc, mc, nc = sizes
        ap, bp, add = buffers

        def jtile(jr):
            nr = f.min(f.value(f"sub i64 {nc}, {jr}"), str(self.nr))
            bpanel = self.gep(f, bp, f.value(f"mul i64 {jr}, {kc}"))
            col = f.value(f"add i64 {jc}, {jr}")
            vectors = f.value(f"sdiv i64 {f.value(f'add i64 {nr}, {self.w - 1}')}, {self.w}")

            def itile(ir):
                mr = f.min(f.value(f"sub i64 {mc}, {ir}"), str(self.mr))
                apanel = self.gep(f, ap, f.value(f"mul i64 {ir}, {kc}"))
                row = f.value(f"add i64 {ic}, {ir}")
                coff = f.value(f"add i64 {f.value(f'mul i64 {row}, %ldc')}, {col}")
                args = (
                    f"(i64 {kc}, ptr {apanel}, ptr {bpanel}, ptr {self.gep(f, '%c', coff)}, "
                    f"i64 %ldc, i1 {add}, i64 {mr}, i64 {nr})"
                )
                labels = [f.label("kern") for _ in range(self.nv)]
                join = f.label("tiled")
                cases = " ".join(f"i64 {v + 1}, label %{labels[v]}" for v in range(self.nv - 1))
                f.emit(f"switch i64 {vectors}, label %{labels[-1]} [{cases}]")
                for v, label in enumerate(labels):
                    f.block(label)
                    f.emit(f'call void @"{self.prefix}kern{v + 1}"{args}')
                    f.emit(f"br label %{join}")
                f.block(join)

            f.loop("0", mc, self.mr, itile)

        f.loop("0", nc, self.nr, jtile)

    def _block_sizes(self, f: _Writer) -> tuple:
        """(kc, mc, nc) as `_split` computes them, in IR."""
        s, scale = self.shape, 8 // self.size

        def split(total: str, block: int, multiple: int) -> str:
            count = f.value(f"sdiv i64 {f.value(f'add i64 {total}, {block - 1}')}, {block}")
            less = f.value(f"sub i64 {count}, 1")
            size = f.value(f"sdiv i64 {f.value(f'add i64 {total}, {less}')}, {count}")
            if multiple == 1:
                return size
            up = f.value(f"add i64 {size}, {multiple - 1}")
            return f.value(f"mul i64 {f.value(f'sdiv i64 {up}, {multiple}')}, {multiple}")

        return (
            split("%k", s.kc * scale, 1),
            split("%m", s.mc, self.mr),
            split("%n", s.nc, self.nr),
        )


def module_ir(dtype, shape: Shape, header: str) -> str:
    """The IR text of a module exporting `symbol(dtype)` for a host of `shape`."""
    g = _Generator(dtype, shape)
    declarations = [
        f"declare {g.vec} {g.fma}({g.vec}, {g.vec}, {g.vec})",
        "declare i64 @llvm.smin.i64(i64, i64)",
    ]
    kernels = [g.kernel(nv) for nv in range(1, g.nv + 1)]
    parts = [*kernels, g.pack_b(), g.pack_a(), g.driver(symbol(dtype))]
    return "\n".join([header, *declarations, "", *parts, "", *g.metadata, ""])


__all__ = [
    "GEMM_PREFIX",
    "KERNEL_MAX_WORK",
    "SHAPES",
    "host_shape",
    "module_ir",
    "suits",
    "symbol",
    "workspace_bytes",
]
