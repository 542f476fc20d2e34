"""The exception tree (EXC-01, EXC-02, EXC-03 at the type level)."""

from __future__ import annotations

import pytest

import ternmq.errors as e

TWINS = {
    e.IllegalStateException: e.IllegalStateRuntimeException,
    e.InvalidClientIDException: e.InvalidClientIDRuntimeException,
    e.InvalidDestinationException: e.InvalidDestinationRuntimeException,
    e.InvalidSelectorException: e.InvalidSelectorRuntimeException,
    e.JMSSecurityException: e.JMSSecurityRuntimeException,
    e.MessageFormatException: e.MessageFormatRuntimeException,
    e.MessageNotWriteableException: e.MessageNotWriteableRuntimeException,
    e.ResourceAllocationException: e.ResourceAllocationRuntimeException,
    e.TransactionInProgressException: e.TransactionInProgressRuntimeException,
    e.TransactionRolledBackException: e.TransactionRolledBackRuntimeException,
}


@pytest.mark.parametrize(("checked", "runtime"), list(TWINS.items()))
def test_exc_02_runtime_twins(checked: type, runtime: type) -> None:
    """EXC-02: each runtime twin subclasses JMSRuntimeException and its checked twin, and
    to_runtime() maps the checked one onto it, keeping text and cause."""
    assert issubclass(runtime, e.JMSRuntimeException) and issubclass(runtime, checked)
    cause = OSError("disk")
    out = e.to_runtime(checked("boom", "E1", cause))
    assert type(out) is runtime and str(out) == "boom" and out.error_code == "E1"
    assert out.linked_exception is cause


def test_exc_02_no_twin_for_eof_and_not_readable() -> None:
    """EXC-02: MessageEOFException and MessageNotReadableException have no runtime twin; the
    runtime flavour is a JMSRuntimeException linking the checked one."""
    for cls in (e.MessageEOFException, e.MessageNotReadableException):
        checked = cls("x")
        out = e.to_runtime(checked)
        assert type(out) is e.JMSRuntimeException and out.linked_exception is checked


def test_exc_03_subclass_keeps_its_parents_twin() -> None:
    """EXC-03: a provider subclass of a checked type maps to that type's runtime twin."""

    class CodecLimit(e.MessageFormatException):
        pass

    out = e.to_runtime(CodecLimit("too big"))
    assert isinstance(out, e.MessageFormatRuntimeException)


def test_exc_01_linked_exception_is_the_cause() -> None:
    """EXC-01: linked_exception is also __cause__; error_code defaults to None."""
    cause = ValueError("low level")
    exc = e.JMSException("high level", linked_exception=cause)
    assert exc.__cause__ is cause and exc.error_code is None
    exc.set_linked_exception(None)
    assert exc.linked_exception is None and exc.__cause__ is None


def test_unsupported_operation_is_jms_and_type_error() -> None:
    """API.md: UnsupportedOperationException is a JMSException and a TypeError."""
    assert issubclass(e.UnsupportedOperationException, e.JMSException)
    assert issubclass(e.UnsupportedOperationException, TypeError)


def test_runtime_api_decorator_converts() -> None:
    """EXC-03: a decorated simplified-API call raises only runtime flavours."""

    @e.runtime_api
    def fails() -> None:
        raise e.IllegalStateException("closed")

    with pytest.raises(e.IllegalStateRuntimeException):
        fails()
