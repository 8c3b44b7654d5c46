"""Random TorchScript programs for test_generated_graphs.py, valid by construction.

A program is the source of `forward(x0, ..., w0)`: inputs `x*` are [rows, cols] float tensors,
`w0` (when present) is [cols, cols], and rows and cols change between runs. So that every program
runs for any rows, cols >= 2, the generator tracks each tensor's shape symbolically: a dim is a
sorted tuple of symbols whose product is its size -- "R" (rows), "C" (cols), or a fresh symbol for
a size only known at run time (>= 1) -- and () is size 1. An op is emitted only when its operands
fit. It also tracks a bound on each tensor's magnitude and rescales by powers of two (exact in
floating point), so that fp32 rounding differences stay far below the comparison tolerance.

Containers are modelled too: a list or dict holds tensors of one shape; a list's length is known
as a lower bound (for indexing), an upper bound (so that loops cannot make it explode) and, outside
loops, exactly (for unpacking).
"""

import copy
import dataclasses
import math
import random
from typing import Callable, Dict, List, Optional, Tuple

import torch

Dim = Tuple[str, ...]
Shape = Tuple[Dim, ...]
ONE: Dim = ()
R: Dim = ("R",)
C: Dim = ("C",)
WEIGHT: Shape = (C, C)
MAX_SIZE = 8  # rows and cols are at most this; bounds sums over R and C dims
MAX_SCALE = 8.0  # tensors larger than this are scaled down by a power of two
MAX_DEPTH = 2  # nesting of if/for blocks
MAX_LIST_LEN = 64  # lists that grow in loops (by extending each other) could otherwise explode
MAX_LOOP_OVER_LIST = 16  # longest list a loop runs over, so that nested loops stay short


@dataclasses.dataclass
class TensorVar:
    name: str
    shape: Shape
    scale: float  # bound on the magnitude of every element
    contiguous: bool  # surely contiguous in the JIT, so view() works on it


@dataclasses.dataclass
class ListVar:
    """A List[Tensor] whose elements all have `shape`; only values within `scale` and, for a
    contiguous list, contiguous values are stored, so that what is read back fits the model even
    in a loop's later iterations."""

    name: str
    shape: Shape
    scale: float
    contiguous: bool
    min_len: int
    exact_len: Optional[int]
    max_len: int
    loop_trips: int  # at most how many times the code that created it runs per call
    grew: bool = False  # grown inside the current loop body
    frozen: bool = False  # being iterated over: not mutated

    def item(self, name: str) -> TensorVar:
        return TensorVar(name, self.shape, self.scale, self.contiguous)

    def accepts(self, t: TensorVar) -> bool:
        return t.shape == self.shape and t.scale <= self.scale and (t.contiguous or not self.contiguous)

    def grow(self, min_added: int, exact_added: Optional[int], max_added: int) -> None:
        self.min_len += min_added
        self.max_len += max_added
        if self.exact_len is not None:
            self.exact_len = None if exact_added is None else self.exact_len + exact_added
        self.grew = True


@dataclasses.dataclass
class DictVar:
    """A Dict[str, Tensor] with values of one shape, like ListVar; `keys` are surely present."""

    name: str
    shape: Shape
    scale: float
    contiguous: bool
    keys: List[str]

    def item(self, name: str) -> TensorVar:
        return TensorVar(name, self.shape, self.scale, self.contiguous)

    accepts = ListVar.accepts


@dataclasses.dataclass
class TupleVar:
    name: str
    items: List[TensorVar]


@dataclasses.dataclass
class Scope:
    """What the code at the current point can use; a sub-block works on a copy."""

    tensors: Dict[str, TensorVar]
    lists: Dict[str, ListVar]
    dicts: Dict[str, DictVar]
    tuples: Dict[str, TupleVar]
    ints: List[str]


@dataclasses.dataclass
class Program:
    source: str
    num_inputs: int  # x0 .. x{n-1}, each [rows, cols]
    has_weight: bool  # w0, [cols, cols]
    shapes: List[Tuple[int, int]]  # (rows, cols) of each run: A, A, B, B, A
    input_seed: int

    def inputs(self, run: int) -> Tuple[torch.Tensor, ...]:
        rows, cols = self.shapes[run]
        generator = torch.Generator().manual_seed(self.input_seed + run)
        xs = [torch.randn(rows, cols, generator=generator) for _ in range(self.num_inputs)]
        if self.has_weight:
            # Entries within 1/cols, as the model's scale for w0 assumes.
            xs.append((torch.rand(cols, cols, generator=generator) * 2 - 1) / cols)
        return tuple(xs)


def compile_program(source: str) -> torch.jit.ScriptFunction:
    return torch.jit.CompilationUnit(source).forward


def generate(seed: int, index: int) -> Program:
    rng = random.Random(f"{seed}:{index}")
    num_inputs = rng.randint(1, 3)
    has_weight = rng.random() < 0.4
    shape_a = (rng.randint(2, MAX_SIZE), rng.randint(2, MAX_SIZE))
    shape_b = shape_a
    while shape_b == shape_a:
        shape_b = (rng.randint(2, MAX_SIZE), rng.randint(2, MAX_SIZE))
    source = _Generator(rng, num_inputs, has_weight).program()
    return Program(source, num_inputs, has_weight, [shape_a, shape_a, shape_b, shape_b, shape_a],
                   rng.getrandbits(31))


def _broadcast(a: Shape, b: Shape) -> Optional[Shape]:
    ndim = max(len(a), len(b))
    a = (ONE,) * (ndim - len(a)) + a
    b = (ONE,) * (ndim - len(b)) + b
    result = []
    for x, y in zip(a, b):
        if x != y and ONE not in (x, y):
            return None
        result.append(x or y)
    return tuple(result)


def _numel(shape: Shape) -> Dim:
    return tuple(sorted(symbol for dim in shape for symbol in dim))


def _is_big(dim: Dim) -> bool:
    """Surely >= 2, so it can be sliced from 1 or chunked in two."""
    return "R" in dim or "C" in dim


def _size_bound(dim: Dim) -> Optional[int]:
    return MAX_SIZE ** len(dim) if set(dim) <= {"R", "C"} else None


def _replace(shape: Shape, index: int, dims: Tuple[Dim, ...]) -> Shape:
    return shape[:index] + dims + shape[index + 1:]


def _index_prefix(dim: int) -> str:
    return ":, " * dim


# Element-wise ops: source template and the bound of the result given the operands' bounds.
UNARY: List[Tuple[str, Callable[[float], float]]] = [
    ("torch.relu({a})", lambda s: s),
    ("{a}.relu()", lambda s: s),
    ("torch.sigmoid({a})", lambda s: 1.0),
    ("torch.tanh({a})", lambda s: 1.0),
    ("{a}.clamp(-0.5, 0.5)", lambda s: min(s, 0.5)),
    ("torch.clamp({a}, min=0.0)", lambda s: s),
    ("torch.abs({a})", lambda s: s),
    ("-{a}", lambda s: s),
    ("{a} * 0.5", lambda s: s / 2),
    ("{a} + 1.0", lambda s: s + 1),
    ("1.0 - {a}", lambda s: s + 1),
    ("torch.sin({a})", lambda s: 1.0),
    ("torch.nn.functional.gelu({a})", lambda s: s),
]
BINARY: List[Tuple[str, Callable[[float, float], float]]] = [
    ("{a} + {b}", lambda s, t: s + t),
    ("torch.add({a}, {b}, alpha=0.5)", lambda s, t: s + t / 2),
    ("{a} - {b}", lambda s, t: s + t),
    ("torch.sub({a}, {b})", lambda s, t: s + t),
    ("{a} * {b}", lambda s, t: s * t),
    ("torch.mul({a}, {b})", lambda s, t: s * t),
    ("torch.maximum({a}, {b})", max),
    ("torch.minimum({a}, {b})", max),
    ("torch.where({a} > {b}, {a}, {b})", max),
]


class _Generator:
    def __init__(self, rng: random.Random, num_inputs: int, has_weight: bool) -> None:
        self.rng = rng
        self.lines: List[str] = []
        self.depth = 0  # of if/for blocks around the current statement
        self.counter = 0  # for variable names
        self.symbols = 0  # for dims of unknown size
        self.used = set()  # tensors read by some statement
        self.loop_trips = 1  # at most how many times the current statement runs per call
        self.params = [f"x{i}" for i in range(num_inputs)] + (["w0"] if has_weight else [])
        tensors = {name: TensorVar(name, (R, C), 3.0, True) for name in self.params}
        if has_weight:
            tensors["w0"] = TensorVar("w0", WEIGHT, 0.5, True)
        self.scope = Scope(tensors, {}, {}, {}, ["rows", "cols"])
        # Statement kinds and how often each is tried: containers that are filled and read back
        # late are what the test exists for, so appends and cat/stack weigh most.
        self.statements = [
            (10, self._unary), (12, self._binary), (6, self._matmul), (2, self._new_weight),
            (6, self._reduce), (10, self._view), (3, self._chunk_or_split),
            (4, self._new_list), (14, self._append), (3, self._insert), (3, self._set_item),
            (2, self._extend), (2, self._slice_list), (6, self._read_list), (2, self._unpack_list),
            (8, self._cat_or_stack), (2, self._new_tuple), (2, self._read_tuple),
            (2, self._new_dict), (3, self._set_dict), (3, self._read_dict),
            (4, self._if), (4, self._for_range), (2, self._for_each),
        ]

    # ----- program, blocks and emission -------------------------------------------------------

    def program(self) -> str:
        params = ", ".join(f"{name}: Tensor" for name in self.params)
        self._emit("rows = x0.size(0)")
        self._emit("cols = x0.size(1)")
        self._block(self.rng.randint(12, 40))
        self._return()
        return "\n".join([f"def forward({params}):"] + self.lines) + "\n"

    def _block(self, count: int) -> None:
        weights, kinds = zip(*self.statements)
        for _ in range(count):
            while not self.rng.choices(kinds, weights)[0]():  # False: not applicable here
                pass

    def _emit(self, line: str) -> None:
        self.lines.append("    " * (self.depth + 1) + line)

    def _fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def _symbol(self) -> Dim:
        """A dim of a size only known at run time."""
        self.symbols += 1
        return (f"s{self.symbols}",)

    def _define(self, expr: str, shape: Shape, scale: float, contiguous: bool) -> None:
        if scale > MAX_SCALE:
            shift = math.ceil(math.log2(scale / (MAX_SCALE / 2)))
            expr, scale = f"({expr}) * {2.0 ** -shift!r}", scale / 2 ** shift
        t = TensorVar(self._fresh("t"), shape, scale, contiguous)
        self._emit(f"{t.name} = {expr}")
        self.scope.tensors[t.name] = t

    def _pick(self, items):
        """Mostly one of the newest, sometimes any: keeps chains deep and reaches far back."""
        items = list(items)
        if not items:
            return None
        if self.rng.random() < 0.6:
            return self.rng.choice(items[-4:])
        return self.rng.choice(items)

    def _tensor(self, where: Callable[[TensorVar], bool] = lambda t: True,
                use: bool = True) -> Optional[TensorVar]:
        """A tensor for an operand, often one that nothing reads yet, so that little is dead code."""
        candidates = [t for t in self.scope.tensors.values() if where(t)]
        unused = [t for t in candidates if t.name not in self.used]
        t = self._pick(unused if unused and self.rng.random() < 0.7 else candidates)
        if t is not None and use:
            self.used.add(t.name)
        return t

    def _dim(self, t: TensorVar) -> Tuple[int, str]:
        """A dim of t, and how to write it (sometimes negative)."""
        d = self.rng.randrange(len(t.shape))
        return d, str(d - len(t.shape) if self.rng.random() < 0.3 else d)

    # ----- tensor ops --------------------------------------------------------------------------

    def _unary(self) -> bool:
        a = self._tensor()
        if self.rng.random() < 0.15:  # a run-time int: rows, cols or a loop index
            k = self.rng.choice(self.scope.ints)
            self._define(f"{a.name} * {k}", a.shape, a.scale * MAX_SIZE, a.contiguous)
            return True
        template, scale = self.rng.choice(UNARY)
        self._define(template.format(a=a.name), a.shape, scale(a.scale), a.contiguous)
        return True

    def _binary(self) -> bool:
        a = self._tensor()
        b = self._tensor(lambda t: t is not a and _broadcast(a.shape, t.shape) is not None) or a
        shape = _broadcast(a.shape, b.shape)
        template, scale = self.rng.choice(BINARY)
        if self.rng.random() < 0.5:
            a, b = b, a
        contiguous = a.contiguous and b.contiguous and a.shape == b.shape
        self._define(template.format(a=a.name, b=b.name), shape, scale(a.scale, b.scale), contiguous)
        return True

    def _new_weight(self) -> bool:
        """A [cols, cols] weight made inside the program: from constants, or from activations."""
        a = self._tensor(lambda t: len(t.shape) == 2 and t.shape[1] == C)
        b = a and self._tensor(lambda t: t.shape == a.shape)
        if b is not None and self.rng.random() < 0.4:
            transposed = self.rng.choice(["{}.t()", "{}.transpose(0, 1)"]).format(a.name)
            self._define(f"torch.tanh(torch.matmul({transposed}, {b.name}))", WEIGHT, 1.0, True)
        else:
            expr = self.rng.choice([
                "torch.linspace(-1.0, 1.0, cols * cols).view(cols, cols) / cols",
                "torch.ones(cols, cols) / cols",
                "torch.eye(cols) * 0.5",
            ])
            self._define(expr, WEIGHT, 0.5, True)
        return True

    def _matmul(self) -> bool:
        w = self._tensor(lambda t: t.shape == WEIGHT)
        a = self._tensor(lambda t: len(t.shape) >= 1 and t.shape[-1] == C)
        if w is None or a is None:
            return self._new_weight()
        bias = self._tensor(lambda t: t.shape == (C,))
        bias_name, bias_scale = (bias.name, bias.scale) if bias else (f"{w.name}[0]", w.scale)
        forms = [(f"torch.matmul({a.name}, {w.name})", 0.0), (f"{a.name} @ {w.name}", 0.0),
                 (f"torch.nn.functional.linear({a.name}, {w.name})", 0.0),
                 (f"torch.nn.functional.linear({a.name}, {w.name}, {bias_name})", bias_scale)]
        if len(a.shape) == 2:
            forms += [(f"torch.mm({a.name}, {w.name})", 0.0),
                      (f"torch.addmm({bias_name}, {a.name}, {w.name})", bias_scale)]
        expr, added = self.rng.choice(forms)
        # Batched matmul on a non-contiguous input may return a view of its folded result.
        self._define(expr, a.shape, a.scale * w.scale * MAX_SIZE + added, len(a.shape) <= 2 or a.contiguous)
        return True

    def _reduce(self) -> bool:
        a = self._tensor(lambda t: len(t.shape) >= 1)
        d, dim_arg = self._dim(a)
        dim, name, s = a.shape[d], a.name, a.scale
        kept, dropped = _replace(a.shape, d, (ONE,)), _replace(a.shape, d, ())
        forms = [
            (f"{name}.mean({dim_arg})", dropped, s),
            (f"{name}.mean({dim_arg}, keepdim=True)", kept, s),
            (f"{name}.amax({dim_arg}, keepdim=True)", kept, s),
            (f"torch.softmax({name}, {dim_arg})", a.shape, 1.0),
            (f"{name}.softmax({dim_arg})", a.shape, 1.0),
            (f"torch.nn.functional.softmax({name}, dim={dim_arg})", a.shape, 1.0),
            (f"torch.log_softmax({name}, {dim_arg})", a.shape, 2 * s + math.log(MAX_SIZE ** 3)),
            (f"{name}.mean()", (), s),
        ]
        bound = _size_bound(dim)
        if bound is not None:
            forms += [(f"{name}.sum({dim_arg})", dropped, s * bound),
                      (f"torch.sum({name}, {dim_arg}, keepdim=True)", kept, s * bound)]
        expr, shape, scale = self.rng.choice(forms)
        self._define(expr, shape, scale, a.contiguous or shape == ())
        return True

    def _view(self) -> bool:
        a = self._tensor()
        views = self._views_of(a)
        target = self._tensor(lambda t: _broadcast(a.shape, t.shape) == t.shape)
        if target is not None:
            views.append((f"{a.name}.expand_as({target.name})", target.shape, False))
        expr, shape, contiguous = self.rng.choice(views)
        self._define(expr, shape, a.scale, contiguous)
        return True

    def _views_of(self, t: TensorVar) -> List[Tuple[str, Shape, bool]]:
        """Every view (or reshape) of t that is valid for any rows and cols: (expr, shape, contiguous)."""
        a, shape, ndim, contiguous = t.name, t.shape, len(t.shape), t.contiguous
        views = [(f"{a}.contiguous()", shape, True), (f"{a}.reshape(-1)", (_numel(shape),), contiguous)]
        if ndim >= 1:
            views.append((f"{a}.flatten()", (_numel(shape),), contiguous))
        if contiguous:
            views.append((f"{a}.view(-1)", (_numel(shape),), True))
        if ndim == 2:
            swapped = (shape[1], shape[0])
            views += [(f"{a}.t()", swapped, False), (f"{a}.transpose(0, 1)", swapped, False),
                      (f"{a}.permute(1, 0)", swapped, False)]
        if ndim == 3:
            order = self.rng.sample(range(3), 3)
            views += [(f"{a}.permute({', '.join(map(str, order))})", tuple(shape[i] for i in order), False),
                      (f"{a}.transpose(-1, -2)", (shape[0], shape[2], shape[1]), False)]
        if ndim <= 2:
            d = self.rng.randint(0, ndim)
            views.append((f"{a}.unsqueeze({d})", shape[:d] + (ONE,) + shape[d:], contiguous))
        for d, dim in enumerate(shape):
            # Slices along dim 0 of a contiguous tensor are contiguous; along other dims they are not.
            stays = contiguous and d == 0
            views += [(f"{a}.select({d}, 0)", _replace(shape, d, ()), stays),
                      (f"{a}[{_index_prefix(d)}0]", _replace(shape, d, ()), stays),
                      (f"{a}.narrow({d}, 0, 1)", _replace(shape, d, (ONE,)), stays),
                      (f"{a}[{_index_prefix(d)}:1]", _replace(shape, d, (ONE,)), stays)]
            if dim == ONE:
                views.append((f"{a}.squeeze({d})", _replace(shape, d, ()), contiguous))
            if _is_big(dim):
                views += [(f"{a}[{_index_prefix(d)}1:]", _replace(shape, d, (self._symbol(),)), stays),
                          (f"{a}.narrow({d}, 1, 1)", _replace(shape, d, (ONE,)), stays),
                          (f"{a}[{_index_prefix(d)}-1]", _replace(shape, d, ()), stays)]
        numel = _numel(shape)
        if numel == ("C", "R"):
            views += [(f"{a}.reshape(rows, cols)", (R, C), contiguous),
                      (f"{a}.reshape(cols, rows)", (C, R), contiguous)]
            if contiguous:
                views.append((f"{a}.view(rows, cols)", (R, C), True))
        if "C" in numel and ndim >= 1:
            rest = list(numel)
            rest.remove("C")
            views.append((f"{a}.reshape(-1, cols)", (tuple(rest), C), contiguous))
        return views

    def _chunk_or_split(self) -> bool:
        a = self._tensor(lambda t: len(t.shape) >= 1)
        d, dim_arg = self._dim(a)
        stays = a.contiguous and d == 0
        kind = self.rng.choice(["chunk", "cat_chunks", "split", "unbind"])
        bound = _size_bound(a.shape[d])
        if kind == "chunk" and _is_big(a.shape[d]):  # a dim that may be 1 has only one chunk
            p, q = (TensorVar(self._fresh("t"), _replace(a.shape, d, (self._symbol(),)), a.scale, stays)
                    for _ in range(2))
            self._emit(f"{p.name}, {q.name} = {a.name}.chunk(2, {dim_arg})")
            self.scope.tensors.update({p.name: p, q.name: q})
        elif kind == "cat_chunks" or bound is None:
            self._define(f"torch.cat({a.name}.chunk(3, {dim_arg}), {dim_arg})", a.shape, a.scale, True)
        else:
            # split(1) and unbind give pieces of one shape: as many as the dim is long.
            expr, shape = ((f"{a.name}.split(1, {dim_arg})", _replace(a.shape, d, (ONE,))) if kind == "split"
                           else (f"{a.name}.unbind({dim_arg})", _replace(a.shape, d, ())))
            length = 2 if _is_big(a.shape[d]) else 1
            self._add_list(expr, ListVar("", shape, a.scale, stays, length, None, bound, self.loop_trips))
        return True

    # ----- containers --------------------------------------------------------------------------

    def _add_list(self, expr: str, model: ListVar) -> None:
        model.name = self._fresh("l")
        self._emit(f"{model.name} = {expr}")
        self.scope.lists[model.name] = model

    def _new_list(self) -> bool:
        a = self._tensor()
        model = ListVar("", a.shape, max(a.scale, 4.0), a.contiguous and self.rng.random() < 0.5, 0, 0, 0,
                        self.loop_trips)
        if self.rng.random() < 0.3:
            model.name = self._fresh("l")
            self._emit(f"{model.name}: List[Tensor] = []")
            self.scope.lists[model.name] = model
            return True
        items = [a] + [t for t in self.scope.tensors.values() if t is not a and model.accepts(t)][-2:]
        model.min_len = model.exact_len = model.max_len = len(items)
        self.used.update(t.name for t in items)
        self._add_list("[" + ", ".join(t.name for t in items) + "]", model)
        return True

    def _repeats(self, lst: ListVar) -> int:
        """At most how many times a statement here runs while `lst` lives."""
        return self.loop_trips // lst.loop_trips

    def _list_and_item(self, where: Callable[[ListVar], bool]):
        pairs = [(l, t) for l in self.scope.lists.values() if not l.frozen and where(l)
                 for t in self.scope.tensors.values() if l.accepts(t)]
        lst, t = self._pick(pairs) or (None, None)
        if t is not None:
            self.used.add(t.name)
        return lst, t

    def _append(self) -> bool:
        lst, t = self._list_and_item(lambda l: l.max_len + self._repeats(l) <= MAX_LIST_LEN)
        if lst is None:
            return False
        self._emit(f"{lst.name}.append({t.name})")
        lst.grow(1, 1, self._repeats(lst))
        return True

    def _insert(self) -> bool:
        lst, t = self._list_and_item(lambda l: l.max_len + self._repeats(l) <= MAX_LIST_LEN)
        if lst is None:
            return False
        self._emit(f"{lst.name}.insert({self.rng.randint(0, lst.min_len)}, {t.name})")
        lst.grow(1, 1, self._repeats(lst))
        return True

    def _set_item(self) -> bool:
        lst, t = self._list_and_item(lambda l: l.min_len >= 1)
        if lst is None:
            return False
        index = self.rng.choice([self.rng.randrange(lst.min_len), -1])
        self._emit(f"{lst.name}[{index}] = {t.name}")
        return True

    def _extend(self) -> bool:
        pairs = [(l, o) for l in self.scope.lists.values() if not l.frozen
                 for o in self.scope.lists.values() if o is not l and l.accepts(o.item(o.name))
                 and l.max_len + o.max_len * self._repeats(l) <= MAX_LIST_LEN]
        if not pairs:
            return False
        lst, other = self.rng.choice(pairs)
        self._emit(f"{lst.name}.extend({other.name})")
        lst.grow(other.min_len, other.exact_len, other.max_len * self._repeats(lst))
        return True

    def _slice_list(self) -> bool:
        lst = self._pick(self.scope.lists.values())
        if lst is None:
            return False
        model = dataclasses.replace(lst, loop_trips=self.loop_trips, grew=False, frozen=False)
        if self.rng.random() < 0.5:
            expr = f"{lst.name}[1:]"
            model.min_len, model.max_len = max(lst.min_len - 1, 0), max(lst.max_len - 1, 0)
            model.exact_len = None if lst.exact_len is None else max(lst.exact_len - 1, 0)
        else:
            expr = f"{lst.name}[:2]"
            model.min_len, model.max_len = min(lst.min_len, 2), min(lst.max_len, 2)
            model.exact_len = None if lst.exact_len is None else min(lst.exact_len, 2)
        self._add_list(expr, model)
        return True

    def _read_list(self) -> bool:
        lst = self._pick(l for l in self.scope.lists.values() if l.min_len >= 1)
        if lst is None:
            return False
        index = self.rng.choice([self.rng.randrange(lst.min_len), -1])
        self._define(f"{lst.name}[{index}]", lst.shape, lst.scale, lst.contiguous)
        return True

    def _unpack_list(self) -> bool:
        lst = self._pick(l for l in self.scope.lists.values() if l.exact_len in (2, 3))
        if lst is None:
            return False
        items = [lst.item(self._fresh("t")) for _ in range(lst.exact_len)]
        self._emit(", ".join(t.name for t in items) + f" = {lst.name}")
        self.scope.tensors.update((t.name, t) for t in items)
        return True

    def _cat_or_stack(self) -> bool:
        lst = self._pick(l for l in self.scope.lists.values() if l.min_len >= 1)
        if lst is None:
            return False
        ndim = len(lst.shape)
        fresh = self._symbol()
        if ndim >= 1 and self.rng.random() < 0.6:
            d = self.rng.randrange(ndim)
            self._define(f"torch.cat({lst.name}, {d})", _replace(lst.shape, d, (fresh,)), lst.scale, True)
        elif ndim < 3:
            d = self.rng.randint(0, ndim)
            shape = lst.shape[:d] + (fresh,) + lst.shape[d:]
            self._define(f"torch.stack({lst.name}, {d})", shape, lst.scale, True)
        else:
            return False
        return True

    def _new_tuple(self) -> bool:
        items = [self._tensor() for _ in range(self.rng.randint(2, 3))]
        name = self._fresh("p")
        self._emit(f"{name} = (" + ", ".join(t.name for t in items) + ")")
        self.scope.tuples[name] = TupleVar(name, items)
        return True

    def _read_tuple(self) -> bool:
        tup = self._pick(self.scope.tuples.values())
        if tup is None:
            return False
        if self.rng.random() < 0.5:
            index = self.rng.randrange(len(tup.items))
            item = tup.items[index]
            self._define(f"{tup.name}[{index}]", item.shape, item.scale, item.contiguous)
        else:
            items = [dataclasses.replace(item, name=self._fresh("t")) for item in tup.items]
            self._emit(", ".join(t.name for t in items) + f" = {tup.name}")
            self.scope.tensors.update((t.name, t) for t in items)
        return True

    def _new_dict(self) -> bool:
        a = self._tensor()
        model = DictVar(self._fresh("d"), a.shape, max(a.scale, 4.0), a.contiguous, [])
        if self.rng.random() < 0.3:
            self._emit(f"{model.name}: Dict[str, Tensor] = {{}}")
        else:
            model.keys.append("k0")
            self._emit(f'{model.name} = {{"k0": {a.name}}}')
        self.scope.dicts[model.name] = model
        return True

    def _set_dict(self) -> bool:
        pairs = [(d, t) for d in self.scope.dicts.values()
                 for t in self.scope.tensors.values() if d.accepts(t)]
        if not pairs:
            return False
        d, t = self._pick(pairs)
        self.used.add(t.name)
        key = self.rng.choice(d.keys + [f"k{len(d.keys)}"])
        self._emit(f'{d.name}["{key}"] = {t.name}')
        if key not in d.keys:
            d.keys.append(key)
        return True

    def _read_dict(self) -> bool:
        d = self._pick(d for d in self.scope.dicts.values() if d.keys)
        if d is None:
            return False
        self._define(f'{d.name}["{self.rng.choice(d.keys)}"]', d.shape, d.scale, d.contiguous)
        return True

    # ----- control flow ------------------------------------------------------------------------

    def _condition(self) -> str:
        choice = self.rng.randrange(4)
        if choice == 0:
            return f"rows > {self.rng.randint(2, MAX_SIZE - 1)}"
        # Inputs give exact sums on both sides; intermediates risk a sign flip by rounding only
        # when the sum is within ~1e-6 of 0.
        t = self._tensor(lambda t: t.name in self.params) if choice == 1 else self._tensor()
        return self.rng.choice([f"{t.name}.sum() > 0", f"bool({t.name}.mean() > 0.0)",
                                f"float({t.name}.amax()) > 0.5"])

    def _child_scope(self, in_loop: bool) -> Scope:
        scope = copy.deepcopy(self.scope)
        if in_loop:
            # In later iterations a list is longer than on entry, by an unknown count.
            for lst in scope.lists.values():
                lst.exact_len, lst.grew = None, False
        return scope

    def _sub_block(self, scope: Scope, count: int, finish: Callable[[], None]) -> Scope:
        """Emits `count` statements, then `finish()`, one level deeper in `scope`; returns it."""
        parent, self.scope = self.scope, scope
        self.depth += 1
        self._block(count)
        finish()
        self.depth -= 1
        scope, self.scope = self.scope, parent
        return scope

    def _merge_tensors(self, *blocks: Scope) -> None:
        """A tensor reassigned in a sub-block (carried by a loop there) may be either value after it."""
        for name, t in self.scope.tensors.items():
            versions = [t] + [block.tensors[name] for block in blocks]
            self.scope.tensors[name] = dataclasses.replace(
                t, scale=max(v.scale for v in versions), contiguous=all(v.contiguous for v in versions))

    def _if(self) -> bool:
        if self.depth >= MAX_DEPTH:
            return False
        # Each branch ends by assigning the outputs, of shapes that exist before the `if`.
        shapes = [self._tensor(use=False).shape for _ in range(self.rng.randint(0, 2))]
        outputs = [self._fresh("t") for _ in shapes]
        chosen: List[List[TensorVar]] = []

        def assign_outputs() -> None:
            chosen.append([self._tensor(lambda t: t.shape == shape) for shape in shapes])
            for name, t in zip(outputs, chosen[-1]):
                self._emit(f"{name} = {t.name}")

        self._emit(f"if {self._condition()}:")
        then = self._sub_block(self._child_scope(in_loop=False), self.rng.randint(1, 4), assign_outputs)
        self._emit("else:")
        other = self._sub_block(self._child_scope(in_loop=False), self.rng.randint(1, 4), assign_outputs)
        self._merge_tensors(then, other)
        for name, lst in self.scope.lists.items():
            a, b = then.lists[name], other.lists[name]
            lst.min_len = min(a.min_len, b.min_len)
            lst.exact_len = a.exact_len if a.exact_len == b.exact_len else None
            lst.max_len = max(a.max_len, b.max_len)
            lst.grew = a.grew or b.grew
        for name, d in self.scope.dicts.items():
            d.keys = [key for key in then.dicts[name].keys if key in other.dicts[name].keys]
        for name, shape, a, b in zip(outputs, shapes, *chosen):
            self.scope.tensors[name] = TensorVar(name, shape, max(a.scale, b.scale),
                                                 a.contiguous and b.contiguous)
        return True

    def _for_range(self) -> bool:
        if self.depth >= MAX_DEPTH:
            return False
        # (source, fewest trips, most trips)
        choices = [(f"range({k})", k, k) for k in (1, 2, 3)]
        sizes = ["rows", "cols"] + [f"{x}.size(0)" for x in self.params]
        choices += [(f"range({n})", 2, MAX_SIZE) for n in sizes]
        choices += [(f"range(len({l.name}))", l.min_len, l.max_len) for l in self.scope.lists.values()
                    if l.max_len <= MAX_LOOP_OVER_LIST]
        trips_expr, min_trips, max_trips = self.rng.choice(choices)
        index = self._fresh("i")
        self._loop(f"for {index} in {trips_expr}:", min_trips, max_trips, index, None)
        return True

    def _for_each(self) -> bool:
        lst = self._pick(l for l in self.scope.lists.values() if l.max_len <= MAX_LOOP_OVER_LIST)
        if self.depth >= MAX_DEPTH or lst is None:
            return False
        item = lst.item(self._fresh("e"))
        self._loop(f"for {item.name} in {lst.name}:", lst.min_len, lst.max_len, None, (lst.name, item))
        return True

    def _loop(self, header: str, min_trips: int, max_trips: int, index: Optional[str],
              each: Optional[Tuple[str, TensorVar]]) -> None:
        """Emits a loop; often one outer tensor is carried: updated at the end of every iteration."""
        carried = self._tensor() if self.rng.random() < 0.6 else None
        body = self._child_scope(in_loop=True)
        if carried is not None:
            # The updates below keep it within 2 in every iteration, of an unknown layout.
            carried = dataclasses.replace(carried, scale=max(carried.scale, 2.0), contiguous=False)
            body.tensors[carried.name] = carried
        if index:
            body.ints.append(index)
        if each:
            body.lists[each[0]].frozen = True
            body.tensors[each[1].name] = each[1]

        def update_carried() -> None:
            if carried is not None:
                t = self._tensor(lambda t: _broadcast(t.shape, carried.shape) == carried.shape)
                update = self.rng.choice(["torch.tanh({c} + {t})", "torch.clamp({c} * {t}, -2.0, 2.0)",
                                          "torch.sigmoid({c} - {t})"])
                self._emit(f"{carried.name} = " + update.format(c=carried.name, t=t.name))
                self.scope.tensors[carried.name] = carried

        self._emit(header)
        outer_trips, self.loop_trips = self.loop_trips, self.loop_trips * max(max_trips, 1)
        body = self._sub_block(body, self.rng.randint(1, 4), update_carried)
        self.loop_trips = outer_trips
        self._merge_tensors(body)
        for name, lst in self.scope.lists.items():
            inner = body.lists[name]
            lst.max_len = inner.max_len  # growth in the body counted every trip already
            if inner.grew:
                lst.min_len += (inner.min_len - lst.min_len) * min_trips
                lst.exact_len, lst.grew = None, True
        if min_trips >= 1:
            for name, d in self.scope.dicts.items():
                d.keys = list(body.dicts[name].keys)

    # ----- outputs -----------------------------------------------------------------------------

    def _return(self) -> None:
        """Returns the newest tensors nothing reads, a checksum of the other such tensors (so that
        little is dead code, without making them all outputs, which the planner leaves alone), and
        often what the containers hold at the end."""
        leaves = [name for name in self.scope.tensors if name not in self.used and name not in self.params]
        count = self.rng.randint(1, 2)
        tensors = leaves[-count:] or [self._tensor().name]
        if leaves[:-count]:
            tensors.append("torch.stack([" + ", ".join(f"{name}.mean()" for name in leaves[:-count]) + "])")
        others = []
        for lst in self.scope.lists.values():
            if lst.min_len >= 1 and self.rng.random() < 0.7:
                # Mostly new tensors: an element returned as is keeps all of the list's elements
                # out of the memory plan.
                forms = [f"torch.stack({lst.name})"] if len(lst.shape) < 3 else []
                if lst.shape:
                    forms.append(f"torch.cat({lst.name}, {self.rng.randrange(len(lst.shape))})")
                if self.rng.random() < 0.2:
                    forms = [f"{lst.name}[-1]", f"{lst.name}[0]"]
                tensors.append(self.rng.choice(forms))
            elif self.rng.random() < 0.1:
                others.append(lst.name)
        for d in self.scope.dicts.values():
            if self.rng.random() < 0.4:
                if d.keys and self.rng.random() < 0.5:
                    tensors.append(f'{d.name}["{self.rng.choice(d.keys)}"]')
                else:
                    others.append(d.name)
        others += [p.name for p in self.scope.tuples.values() if self.rng.random() < 0.1]
        if len(tensors) >= 2 and not others and self.rng.random() < 0.3:
            self._emit("return [" + ", ".join(tensors) + "]")
            return
        outputs = tensors + others
        self.rng.shuffle(outputs)
        self._emit("return " + ", ".join(outputs))
