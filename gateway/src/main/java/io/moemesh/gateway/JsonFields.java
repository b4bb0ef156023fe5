package io.moemesh.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeType;

/** Typed reads of a request's JSON fields; a wrong type is a 400 naming the field, in OpenAI's wording. */
final class JsonFields {
  private JsonFields() {}

  /** The field, or null when absent or JSON null (both mean "use the default"). */
  static JsonNode get(JsonNode object, String name) {
    JsonNode v = object.get(name);
    return v == null || v.isNull() ? null : v;
  }

  static String string(JsonNode object, String name, String param) {
    JsonNode v = get(object, name);
    if (v == null) return null;
    if (!v.isTextual()) throw wrongType(param, "a string", v);
    return v.asText();
  }

  static Boolean bool(JsonNode object, String name) {
    JsonNode v = get(object, name);
    if (v == null) return null;
    if (!v.isBoolean()) throw wrongType(name, "a boolean", v);
    return v.asBoolean();
  }

  static Integer integer(JsonNode object, String name) {
    JsonNode v = get(object, name);
    if (v == null) return null;
    if (!v.isIntegralNumber() || !v.canConvertToInt()) throw wrongType(name, "an integer", v);
    return v.intValue();
  }

  static Long longValue(JsonNode object, String name) {
    JsonNode v = get(object, name);
    if (v == null) return null;
    if (!v.isIntegralNumber() || !v.canConvertToLong()) throw wrongType(name, "an integer", v);
    return v.longValue();
  }

  static Double number(JsonNode object, String name) {
    JsonNode v = get(object, name);
    if (v == null) return null;
    if (!v.isNumber()) throw wrongType(name, "a number", v);
    return v.doubleValue();
  }

  static ApiError wrongType(String param, String expected, JsonNode got) {
    return ApiError.invalid("Invalid type for '" + param + "': expected " + expected + ", but got "
        + typeName(got) + " instead.", param, "invalid_type");
  }

  private static String typeName(JsonNode v) {
    if (v.getNodeType() == JsonNodeType.NUMBER) return v.isIntegralNumber() ? "an integer" : "a decimal";
    return switch (v.getNodeType()) {
      case STRING -> "a string";
      case BOOLEAN -> "a boolean";
      case ARRAY -> "an array";
      case OBJECT -> "an object";
      default -> "a " + v.getNodeType().name().toLowerCase(java.util.Locale.ROOT);
    };
  }
}
