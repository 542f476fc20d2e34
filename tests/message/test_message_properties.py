"""Message properties: types, names, modes, conversions (catalog PROP, vectors P-01 … P-27)."""

from __future__ import annotations

import math
from decimal import Decimal

import pytest

from ternmq.errors import (
    JMSException,
    MessageFormatException,
    MessageNotWriteableException,
)
from ternmq.message import BytesMessage, MapMessage, Message, TextMessage
from ternmq.message._names import JMSX_TYPES, VENDOR_PREFIX, is_identifier
from ternmq.message._types import T

SETTERS = [
    ("set_boolean_property", True),
    ("set_byte_property", 1),
    ("set_short_property", 1),
    ("set_int_property", 1),
    ("set_long_property", 1),
    ("set_float_property", 1.0),
    ("set_double_property", 1.0),
    ("set_string_property", "x"),
    ("set_object_property", "x"),
]


def received(msg: Message | None = None) -> Message:
    m = msg if msg is not None else TextMessage("t")
    m._freeze()
    return m


# ---------------------------------------------------------------- PROP-01, PROP-02, PROP-03


def test_prop_01_each_type_is_kept_with_its_value() -> None:
    """PROP-01: the eight property types are stored with their JMS type (what selectors and
    the codec see) and survive a copy unchanged."""
    m = Message()
    m.set_boolean_property("b", True)
    m.set_byte_property("y", -5)
    m.set_short_property("s", 300)
    m.set_int_property("i", 70000)
    m.set_long_property("l", 2**40)
    m.set_float_property("f", 1.5)
    m.set_double_property("d", 2.25)
    m.set_string_property("t", "text")
    expected = {
        "b": (T.BOOLEAN, True),
        "y": (T.BYTE, -5),
        "s": (T.SHORT, 300),
        "i": (T.INT, 70000),
        "l": (T.LONG, 2**40),
        "f": (T.FLOAT, 1.5),
        "d": (T.DOUBLE, 2.25),
        "t": (T.STRING, "text"),
    }
    for source in (m, m._copy()):
        assert {k: (source._property_types[k], source._properties[k]) for k in expected} == (
            expected
        )
        assert source._property_types.keys() == source._properties.keys()
    assert type(m._properties["b"]) is bool
    assert m.get_property_type("i") == "int" and m.get_property_type("l") == "long"


def test_prop_02_typed_setters_check_their_argument() -> None:
    """PROP-02, P-21: wrong Python type -> TypeError (bool included); out of range ->
    ValueError; exact Java limits accepted."""
    m = Message()
    with pytest.raises(TypeError):
        m.set_int_property("p", True)
    with pytest.raises(ValueError):
        m.set_int_property("p", 2**31)
    with pytest.raises(ValueError):
        m.set_byte_property("p", 128)
    with pytest.raises(TypeError):
        m.set_int_property("p", "5")  # type: ignore[arg-type]
    limits = {
        "set_byte_property": 7,
        "set_short_property": 15,
        "set_int_property": 31,
        "set_long_property": 63,
    }
    for setter, bits in limits.items():
        getattr(m, setter)("p", -(2**bits))
        getattr(m, setter)("p", 2**bits - 1)
        with pytest.raises(ValueError):
            getattr(m, setter)("p", 2**bits)
        with pytest.raises(ValueError):
            getattr(m, setter)("p", -(2**bits) - 1)
        with pytest.raises(TypeError):
            getattr(m, setter)("p", 1.0)
        with pytest.raises(TypeError):
            getattr(m, setter)("p", False)
    with pytest.raises(TypeError):
        m.set_boolean_property("p", 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        m.set_float_property("p", True)
    with pytest.raises(TypeError):
        m.set_double_property("p", "1.0")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        m.set_string_property("p", 5)  # type: ignore[arg-type]
    m.set_double_property("p", 3)  # integral ints widen implicitly
    assert m.get_double_property("p") == 3.0 and type(m.get_double_property("p")) is float
    m.set_float_property("p", 3)
    assert m.get_float_property("p") == 3.0


def test_prop_03_float_is_stored_as_binary32() -> None:
    """PROP-03, P-06, P-15: nearest binary32, widened exactly; specials round-trip; a finite
    value overflowing binary32 raises ValueError."""
    m = Message()
    m.set_float_property("p", 1.1)
    assert m.get_float_property("p") == 1.100000023841858
    assert m.get_double_property("p") == 9227469 / 8388608
    assert m._properties["p"] == 1.100000023841858  # what selectors see
    for special in (math.inf, -math.inf):
        m.set_float_property("p", special)
        assert m.get_float_property("p") == special
    m.set_float_property("p", math.nan)
    assert math.isnan(m.get_float_property("p"))
    m.set_float_property("p", -0.0)
    assert math.copysign(1.0, m.get_float_property("p")) == -1.0
    with pytest.raises(ValueError):
        m.set_float_property("p", 1e39)
    m.set_float_property("p", 3.4028235e38)  # FLT_MAX itself is fine
    assert m.get_float_property("p") == 3.4028234663852886e38
    m.set_float_property("p", 1e-50)  # underflow is not an error
    assert m.get_float_property("p") == 0.0


# ---------------------------------------------------------------- names


@pytest.mark.parametrize("setter, value", SETTERS)
@pytest.mark.parametrize("name", [None, ""])
def test_prop_04_none_or_empty_name_raises_value_error(
    setter: str, value: object, name: str | None
) -> None:
    """PROP-04, P-22: every setter, object setter included, rejects None and ""."""
    with pytest.raises(ValueError) as info:
        getattr(Message(), setter)(name, value)
    assert not isinstance(info.value, JMSException)


@pytest.mark.parametrize(
    "name",
    [
        "NOT",
        "not",
        "Not",
        "AND",
        "or",
        "Between",
        "like",
        "In",
        "is",
        "escape",
        "null",
        "TRUE",
        "false",
        "a-b",
        "1abc",
        "a b",
        "a.b",
        "a·b",
        "x\u00a0",
        "\ud800",
    ],
)
def test_prop_05_invalid_names_are_rejected(name: str) -> None:
    """PROP-05, P-26, A-25: selector identifiers only; keywords in any case rejected."""
    m = Message()
    with pytest.raises(ValueError):
        m.set_string_property(name, "x")
    assert not m.property_exists(name)
    assert m.get_string_property(name) is None  # getters treat it as absent


@pytest.mark.parametrize(
    "name",
    ["$price", "_qty", "größe", "€uro", "nulls", "andy", "INDEX", "ın", "a1", "x\u200b", "é"],
)
def test_prop_05_java_identifiers_are_accepted(name: str) -> None:
    """PROP-05 (SEL-12): Java identifier start/part characters, ASCII-only keyword match."""
    m = Message()
    m.set_int_property(name, 1)
    assert m.get_int_property(name) == 1
    assert is_identifier(name)


def test_prop_06_names_are_case_sensitive() -> None:
    """PROP-06: Color and color are two properties."""
    m = Message()
    m.set_string_property("Color", "red")
    m.set_string_property("color", "blue")
    assert m.get_string_property("Color") == "red"
    assert m.get_string_property("color") == "blue"
    assert m.get_property_names() == {"Color", "color"}
    assert not m.property_exists("COLOR")


# ---------------------------------------------------------------- modes


@pytest.mark.parametrize("setter, value", SETTERS)
def test_prop_07_received_properties_are_read_only(setter: str, value: object) -> None:
    """PROP-07, P-23: every setter raises MessageNotWriteableException on a received
    message; clear_properties() makes them writable."""
    m = received()
    with pytest.raises(MessageNotWriteableException):
        getattr(m, setter)("x", value)
    m.clear_properties()
    getattr(m, setter)("x", value)
    assert m.get_property_names() == {"x"}


def test_prop_07_sent_message_properties_stay_writable() -> None:
    """PROP-07: a message the application created stays writable (also after a send, which
    works on a _copy)."""
    m = TextMessage("x")
    m.set_int_property("a", 1)
    sent = m._copy()
    m.set_int_property("a", 2)
    assert sent.get_int_property("a") == 1
    assert m.get_int_property("a") == 2


def test_prop_23_vector_received_message() -> None:
    """P-23: MessageNotWriteableException, then after clear_properties {'x'}."""
    m = received(BytesMessage())
    m._properties["JMSXDeliveryCount"] = 1
    m._property_types["JMSXDeliveryCount"] = T.INT
    with pytest.raises(MessageNotWriteableException):
        m.set_string_property("x", "y")
    m.clear_properties()
    m.set_string_property("x", "y")
    assert m.get_property_names() == {"x"}


# ---------------------------------------------------------------- conversions (vectors)


def test_prop_08_vectors_p01_to_p05_p24_p25() -> None:
    """PROP-08, PROP-11: P-01 … P-05, P-24, P-25."""
    m = Message()
    m.set_int_property("p", 5)
    assert m.get_long_property("p") == 5  # P-01
    with pytest.raises(MessageFormatException):
        m.get_double_property("p")  # P-02
    with pytest.raises(MessageFormatException):
        m.get_short_property("p")  # P-03
    assert m.get_string_property("p") == "5"  # P-04
    m.set_byte_property("p", -128)  # P-05
    assert m.get_short_property("p") == -128
    assert m.get_int_property("p") == -128
    assert m.get_long_property("p") == -128
    assert m.get_string_property("p") == "-128"
    with pytest.raises(MessageFormatException):
        m.get_float_property("p")
    with pytest.raises(MessageFormatException):
        m.get_boolean_property("p")
    m.set_long_property("p", 5)
    with pytest.raises(MessageFormatException):
        m.get_int_property("p")  # P-24
    m.set_short_property("p", 5)
    with pytest.raises(MessageFormatException):
        m.get_byte_property("p")  # P-25


def test_prop_08_vectors_p06_to_p10() -> None:
    """PROP-03, PROP-08, PROP-11: P-06 … P-10."""
    m = Message()
    m.set_float_property("p", 1.1)
    assert m.get_double_property("p") == 1.100000023841858  # P-06
    assert m.get_string_property("p") == "1.1"  # P-07
    m.set_double_property("p", 1.1)
    with pytest.raises(MessageFormatException):
        m.get_float_property("p")  # P-08
    cases = {
        100.0: "100.0",
        1e21: "1.0E21",
        1e7: "1.0E7",
        9999999.0: "9999999.0",
        0.001: "0.001",
        1e-4: "1.0E-4",
        12345678.9: "1.23456789E7",
        -0.0: "-0.0",
        math.nan: "NaN",
        -math.inf: "-Infinity",
    }
    for x, text in cases.items():  # P-09
        m.set_double_property("p", x)
        assert m.get_string_property("p") == text, x
    m.set_boolean_property("p", True)
    assert m.get_string_property("p") == "true"  # P-10
    with pytest.raises(MessageFormatException):
        m.get_int_property("p")
    m.set_boolean_property("p", False)
    assert m.get_string_property("p") == "false"


def test_prop_10_string_to_boolean_vector_p11() -> None:
    """PROP-10, P-11: Boolean.valueOf, never raises."""
    m = Message()
    for text, want in [
        ("true", True),
        ("TRUE", True),
        ("tRuE", True),
        (" true", False),
        ("yes", False),
        ("1", False),
        ("", False),
        ("false", False),
        ("truee", False),
    ]:
        m.set_string_property("p", text)
        assert m.get_boolean_property("p") is want, text
    m.set_string_property("p", None)
    assert m.get_boolean_property("p") is False


def test_prop_09_string_to_integral_vectors_p12_p13_p16() -> None:
    """PROP-09, P-12, P-13, P-16: Java valueOf rules; ValueError, not a JMS exception."""
    m = Message()
    for text, want in [("+42", 42), ("-0", 0), ("007", 7), ("٤٢", 42)]:
        m.set_string_property("p", text)
        assert m.get_int_property("p") == want
    for text in [" 42", "42 ", "4_2", "0x2A", "42L", "1.0", "", "+", "-", "2147483648"]:
        m.set_string_property("p", text)
        with pytest.raises(ValueError) as info:
            m.get_int_property("p")
        assert not isinstance(info.value, JMSException), text
    m.set_string_property("p", "128")
    with pytest.raises(ValueError):
        m.get_byte_property("p")  # P-13
    assert m.get_short_property("p") == 128
    m.set_string_property("p", "1.5")
    with pytest.raises(ValueError):
        m.get_long_property("p")  # P-16
    m.set_string_property("p", "-9223372036854775808")
    assert m.get_long_property("p") == -(2**63)


def test_prop_09_string_to_double_vector_p14_p15() -> None:
    """PROP-09, P-14, P-15: Double/Float.valueOf rules."""
    m = Message()
    good = {
        " 2.5 ": 2.5,
        "2.5f": 2.5,
        ".5": 0.5,
        "5.": 5.0,
        "0x1p3": 8.0,
        "+Infinity": math.inf,
        "-Infinity": -math.inf,
        "1e400": math.inf,
        "1e-400": 0.0,
        "\t7D\n": 7.0,
        "-0x1.8P1": -3.0,
    }
    for text, want in good.items():
        m.set_string_property("p", text)
        assert m.get_double_property("p") == want, text
    m.set_string_property("p", "NaN")
    assert math.isnan(m.get_double_property("p"))
    for text in ["inf", "nan", "infinity", "1,5", "1_0", "", "1e", "0x1", "NaNd", "1.0 x"]:
        m.set_string_property("p", text)
        with pytest.raises(ValueError) as info:
            m.get_double_property("p")
        assert not isinstance(info.value, JMSException), text
    m.set_string_property("p", "1.1")
    assert m.get_float_property("p") == 1.100000023841858  # P-15
    assert m.get_double_property("p") == 1.1


def test_prop_12_absent_and_null_properties_vector_p17() -> None:
    """PROP-12, PROP-18, P-17: valueOf(null) of each target type."""
    m = Message()
    m.set_string_property("n", None)
    for name in ("m", "n"):
        assert m.get_boolean_property(name) is False
        for getter in ("byte", "short", "int", "long"):
            with pytest.raises(ValueError):
                getattr(m, f"get_{getter}_property")(name)
        for getter in ("float", "double"):
            with pytest.raises(TypeError) as info:
                getattr(m, f"get_{getter}_property")(name)
            assert not isinstance(info.value, JMSException)
        assert m.get_string_property(name) is None
        assert m.get_object_property(name) is None
    assert m.property_exists("m") is False
    assert m.property_exists("n") is True


def test_prop_13_object_property_vectors_p18_to_p20() -> None:
    """PROP-13, P-18, P-19, P-20: object setter maps plain values; others raise MFE."""
    m = Message()
    m.set_object_property("p", 5)
    assert m.get_object_property("p") == 5
    assert m.get_long_property("p") == 5
    with pytest.raises(MessageFormatException):
        m.get_int_property("p")  # a plain int is stored as long
    m.set_object_property("p", True)
    assert m.get_boolean_property("p") is True
    with pytest.raises(MessageFormatException):
        m.get_long_property("p")
    m.set_object_property("p", 2.5)
    assert m.get_property_type("p") == "double"
    m.set_object_property("p", "a")
    assert m.get_property_type("p") == "String"  # a one-character str is a String
    for bad in [2**63, -(2**63) - 1, b"ab", [1], Decimal("1"), {"a": 1}, (1,), object()]:
        with pytest.raises(MessageFormatException):
            m.set_object_property("q", bad)  # type: ignore[arg-type]
    assert not m.property_exists("q")
    m.set_object_property("q", 2**63 - 1)
    assert m.get_object_property("q") == 2**63 - 1
    assert type(m.get_object_property("p")) is str


def test_prop_14_property_type_query() -> None:
    """PROP-14: get_property_type tells the JMS type so bridges can keep types."""
    m = Message()
    for setter, value, name in [
        ("set_boolean_property", True, "boolean"),
        ("set_byte_property", 1, "byte"),
        ("set_short_property", 1, "short"),
        ("set_int_property", 1, "int"),
        ("set_long_property", 1, "long"),
        ("set_float_property", 1.0, "float"),
        ("set_double_property", 1.0, "double"),
        ("set_string_property", "s", "String"),
        ("set_string_property", None, "null"),
    ]:
        getattr(m, setter)("p", value)
        assert m.get_property_type("p") == name
    assert m.get_property_type("absent") is None


def test_prop_15_null_values_exist() -> None:
    """PROP-15, A-24: a null property exists, is listed, reads as null; the selector dict
    holds None for it."""
    m = Message()
    m.set_string_property("s", None)
    m.set_object_property("o", None)
    assert m.property_exists("s") and m.property_exists("o")
    assert m.get_property_names() == {"s", "o"}
    assert m._properties["s"] is None and m._property_types["s"] is T.NULL
    assert m.get_string_property("o") is None


def test_prop_16_property_names() -> None:
    """PROP-16, P-27: all properties present, JMSX included, header names never."""
    m = TextMessage("x")
    m.jms_message_id = "ID:1"
    m.jms_type = "t"
    m.set_int_property("a", 1)
    m.set_string_property("JMSXGroupID", "g")
    m._properties["JMSXDeliveryCount"] = 1
    m._property_types["JMSXDeliveryCount"] = T.INT
    m._freeze()
    names = m.get_property_names()
    assert names == {"a", "JMSXGroupID", "JMSXDeliveryCount"}
    assert "JMSMessageID" not in names and "JMSType" not in names
    names.add("injected")  # a new set each time: the message is unaffected
    assert "injected" not in m.get_property_names()


def test_prop_17_clear_properties() -> None:
    """PROP-17: removes everything (JMSX and JMS_ too), keeps headers and body, writable."""
    m = TextMessage("body")
    m.jms_type = "kind"
    m.set_int_property("a", 1)
    m.set_int_property("JMSXGroupSeq", 1)
    m.set_string_property(VENDOR_PREFIX + "Origin", "stomp")
    m._freeze()
    m.clear_properties()
    assert m.get_property_names() == set()
    assert m.text == "body" and m.jms_type == "kind"
    assert m._read_only_body is True  # body mode untouched
    m.set_int_property("b", 2)
    assert m.get_int_property("b") == 2
    assert not hasattr(m, "remove_property")


def test_prop_18_property_exists() -> None:
    """PROP-18: True exactly when present."""
    m = Message()
    assert not m.property_exists("a")
    m.set_boolean_property("a", False)
    assert m.property_exists("a")
    assert not m.property_exists("A")
    assert not m.property_exists(None)  # type: ignore[arg-type]


def test_prop_19_values_are_copies() -> None:
    """PROP-19: getters hand out immutable values; nothing returned aliases the storage."""
    m = Message()
    m.set_string_property("s", "abc")
    names = m.get_property_names()
    names.clear()
    assert m.property_exists("s")
    got = m.get_object_property("s")
    assert isinstance(got, str)  # immutable
    for value in (m.get_object_property("s"), m.get_string_property("s")):
        assert type(value) in (str, int, float, bool)


# ---------------------------------------------------------------- JMSX and JMS_


def test_prop_20_jmsx_prefix_is_reserved() -> None:
    """PROP-20: JMSX (exact case) is reserved for the JMS-defined names; lower case is an
    ordinary name; the defined names carry their JMS types."""
    m = Message()
    with pytest.raises(ValueError):
        m.set_string_property("JMSXFoo", "x")
    with pytest.raises(ValueError):
        m.set_int_property("JMSXState", 1)  # never exposed
    m.set_string_property("jmsxFoo", "x")  # not the reserved prefix
    m.set_string_property("JMSXUserID", "u")
    m.set_string_property("JMSXAppID", "a")
    m.set_int_property("JMSXDeliveryCount", 1)
    m.set_long_property("JMSXRcvTimestamp", 1)
    m.set_string_property("JMSXProducerTXID", "p")
    m.set_string_property("JMSXConsumerTXID", "c")
    assert JMSX_TYPES["JMSXGroupSeq"] is T.INT


def test_prop_21_group_properties_keep_their_types() -> None:
    """PROP-21: JMSXGroupID (String) and JMSXGroupSeq (int) are settable and keep their
    types (also through the object setter, where a plain int becomes an int)."""
    m = TextMessage()
    m.set_string_property("JMSXGroupID", "g1")
    m.set_int_property("JMSXGroupSeq", 1)
    assert m._property_types["JMSXGroupID"] is T.STRING
    assert m._property_types["JMSXGroupSeq"] is T.INT
    m.set_object_property("JMSXGroupSeq", 2)
    assert m._property_types["JMSXGroupSeq"] is T.INT
    assert m.get_int_property("JMSXGroupSeq") == 2
    dup = m._copy()
    assert dup._property_types["JMSXGroupSeq"] is T.INT


def test_prop_22_group_properties_reject_other_types() -> None:
    """PROP-22: JMSXGroupID non-String or JMSXGroupSeq non-int -> MessageFormatException."""
    m = Message()
    with pytest.raises(MessageFormatException):
        m.set_int_property("JMSXGroupID", 1)
    with pytest.raises(MessageFormatException):
        m.set_object_property("JMSXGroupID", 1)
    with pytest.raises(MessageFormatException):
        m.set_long_property("JMSXGroupSeq", 1)
    with pytest.raises(MessageFormatException):
        m.set_string_property("JMSXGroupSeq", "1")
    with pytest.raises(MessageFormatException):
        m.set_object_property("JMSXGroupSeq", 2**40)
    with pytest.raises(MessageFormatException):
        m.set_object_property("JMSXGroupSeq", True)
    assert not m.property_exists("JMSXGroupSeq")


def test_prop_24_delivery_count_is_an_int_property() -> None:
    """PROP-23, PROP-24, PROP-25, PROP-26 (message-level part): the client stores
    JMSXDeliveryCount as an int readable through the getters and selector dict; a sender's
    fresh message does not have it."""
    assert not TextMessage("x").property_exists("JMSXDeliveryCount")
    m = TextMessage("x")
    m.set_int_property("JMSXDeliveryCount", 3)
    m._freeze()
    assert m.get_int_property("JMSXDeliveryCount") == 3
    assert m._properties["JMSXDeliveryCount"] == 3
    assert "JMSXDeliveryCount" in JMSX_TYPES and "JMSXGroupID" in JMSX_TYPES


def test_prop_27_vendor_prefix_is_allowed() -> None:
    """PROP-27: provider-specific JMS_ names are valid; ternmq's prefix is fixed."""
    assert VENDOR_PREFIX.startswith("JMS_")
    m = Message()
    m.set_string_property(VENDOR_PREFIX + "ContentType", "text/plain")
    m.set_string_property("JMS_IBM_Format", "MQSTR")  # another vendor's, e.g. via a bridge
    assert m.get_property_names() == {VENDOR_PREFIX + "ContentType", "JMS_IBM_Format"}


def test_prop_28_set_object_property_rules_for_producer() -> None:
    """PROP-28 (message-level part): the object setter a JMSProducer relies on applies the
    same names, types and read-only rules."""
    m = Message()
    with pytest.raises(MessageFormatException):
        m.set_object_property("p", [1])  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        m.set_object_property("", 1)
    m._freeze()
    with pytest.raises(MessageNotWriteableException):
        m.set_object_property("p", 1)


def test_prop_29_prop_30_selector_dict_holds_typed_values() -> None:
    """PROP-29, PROP-30 (message-level part): the selector dict holds the value with the
    type it was set with (a String '2' stays a str), and a copy changes nothing."""
    m = Message()
    m.set_string_property("NumberOfOrders", "2")
    m.set_short_property("s", 2)
    dup = m._copy()
    assert dup._properties == {"NumberOfOrders": "2", "s": 2}
    assert dup._property_types == {"NumberOfOrders": T.STRING, "s": T.SHORT}


def test_prop_properties_on_every_body_type() -> None:
    """PROP-01: properties work the same on all message types."""
    for m in (TextMessage(), BytesMessage(), MapMessage()):
        m.set_int_property("a", 1)
        assert m.get_long_property("a") == 1


def test_prop_string_with_lone_surrogate_is_rejected() -> None:
    """A-33 (BODY-14 rule for property Strings)."""
    with pytest.raises(MessageFormatException):
        Message().set_string_property("s", "x\udc00")
