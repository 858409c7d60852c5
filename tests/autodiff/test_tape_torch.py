"""Cross-check of the tape against PyTorch autograd: node names, values, second-backward error."""

import numpy as np
import pytest

from jaxparadigm.autodiff.tape import Var

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.crosscheck


def _strip(name: str) -> str:
    """'MulBackward0' -> 'MulBackward' (PyTorch appends an overload index)."""
    return name.rstrip("0123456789")


A = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], np.float32)
B = np.array([[1.0, 0.5], [-0.5, 2.0], [0.25, -1.0]], np.float32)
C = np.array([0.3, -0.2], np.float32)

OPS = {
    "add": lambda a, b, c: (a @ b) + c,
    "sub": lambda a, b, c: (a @ b) - c,
    "mul": lambda a, b, c: (a @ b) * c,
    "div": lambda a, b, c: (a @ b) / (c + 2.0),
    "pow": lambda a, b, c: (a @ b) ** 2,
    "neg": lambda a, b, c: -(a @ b),
    "exp": lambda a, b, c: (a @ b).exp(),
    "log": lambda a, b, c: (a * a + 1.0).log(),
    "sin": lambda a, b, c: a.sin(),
    "cos": lambda a, b, c: a.cos(),
    "tanh": lambda a, b, c: a.tanh(),
    "sigmoid": lambda a, b, c: a.sigmoid(),
    "relu": lambda a, b, c: a.relu(),
    "sum": lambda a, b, c: a.sum(),
    "mean": lambda a, b, c: a.mean(),
    "reshape": lambda a, b, c: a.reshape(3, 2),
    "T": lambda a, b, c: a.T,
    "mm": lambda a, b, c: a @ b,
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_node_names_and_gradients_match_torch(name):
    op = OPS[name]
    ours = [Var(x, requires_grad=True) for x in (A, B, C)]
    theirs = [torch.tensor(x, requires_grad=True) for x in (A, B, C)]
    y, ty = op(*ours), op(*theirs)
    assert y.grad_fn.name == _strip(ty.grad_fn.name())
    np.testing.assert_allclose(np.asarray(y.value), ty.detach().numpy(), rtol=1e-6, atol=1e-6)
    (y * y).sum().backward()
    (ty * ty).sum().backward()
    for v, t in zip(ours, theirs, strict=True):
        if t.grad is None:
            assert v.grad is None
        else:
            np.testing.assert_allclose(np.asarray(v.grad), t.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_seed_chain_and_second_backward_agree_with_torch():
    x, tx = Var(C, requires_grad=True), torch.tensor(C, requires_grad=True)
    y, ty = (x**2 + 3 * x).sum(), (tx**2 + 3 * tx).sum()
    chain = lambda node: [
        _strip(n.name() if callable(n.name) else n.name) for n, _ in node.next_functions if n
    ]
    assert chain(y.grad_fn.next_functions[0][0]) == chain(ty.grad_fn.next_functions[0][0])
    y.backward()
    ty.backward()
    np.testing.assert_allclose(np.asarray(x.grad), tx.grad.numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError) as ours:
        y.backward()
    with pytest.raises(RuntimeError) as theirs:
        ty.backward()
    assert str(ours.value) == str(theirs.value)


def test_pow_at_base_zero_matches_torch():
    """Both gradients of a**b where a == 0, for negative, zero and positive exponents."""
    a_np = np.array([0.0, 0.0, 0.0, 2.0], np.float32)
    b_np = np.array([-1.0, 0.0, 2.0, -0.5], np.float32)
    a, b = Var(a_np, requires_grad=True), Var(b_np, requires_grad=True)
    ta, tb = torch.tensor(a_np, requires_grad=True), torch.tensor(b_np, requires_grad=True)
    (a**b).sum().backward()
    (ta**tb).sum().backward()
    np.testing.assert_allclose(np.asarray(a.grad), ta.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(b.grad), tb.grad.numpy(), rtol=1e-6)
