/* The attribute-value grammar (edit/attribute-value.h) that graft-cli
 * edit, the window's Set Attribute… dialog and add-node/insert-node all
 * read: assignments, TYPE prefixes, scalars, lists and their errors. */
#include <string.h>
#include "edit/attribute-value.h"
#include "edit/edit.h"
#include "edit/edit-operation.h"

static void
assert_assignment (const char *text, const char *name, const char *type, const char *value)
{
  g_autofree char *got_name = NULL, *got_type = NULL, *got_value = NULL;
  g_autoptr(GError) error = NULL;

  g_assert_true (graft_attribute_assignment_parse (text, &got_name, &got_type, &got_value, &error));
  g_assert_no_error (error);
  g_assert_cmpstr (got_name, ==, name);
  g_assert_cmpstr (got_type, ==, type);
  g_assert_cmpstr (got_value, ==, value);
}

static void
test_assignments (void)
{
  g_autofree char *name = NULL, *type = NULL, *value = NULL;
  g_autoptr(GError) error = NULL;

  assert_assignment ("alpha=0.2", "alpha", NULL, "0.2");
  assert_assignment ("alpha=float:0.2", "alpha", "float", "0.2");
  assert_assignment (" perm = ints:[0, 2, 1]", "perm", "ints", "[0, 2, 1]");
  assert_assignment ("perm=INTS:[0,1]", "perm", "INTS", "[0,1]");
  /* A prefix that names no type is part of the value. */
  assert_assignment ("mode=constant:x", "mode", NULL, "constant:x");
  assert_assignment ("equation=bij,bjk->bik", "equation", NULL, "bij,bjk->bik");
  /* The first '=' ends the name; later ones belong to the value. */
  assert_assignment ("expr=a=b", "expr", NULL, "a=b");
  assert_assignment ("alpha=", "alpha", NULL, "");
  assert_assignment ("name=string:", "name", "string", "");

  g_assert_false (graft_attribute_assignment_parse ("nonsense", &name, &type, &value, &error));
  g_assert_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID);
  g_assert_nonnull (strstr (error->message, "'nonsense' is not NAME=[TYPE:]VALUE"));
  g_clear_error (&error);
  g_assert_false (graft_attribute_assignment_parse (" =1", &name, &type, &value, &error));
  g_assert_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID);
}

static void
test_types (void)
{
  GraftAttrType type = GRAFT_ATTR_UNDEFINED;
  g_autoptr(GError) error = NULL;

  g_assert_true (graft_attribute_type_from_name ("Floats", &type, NULL));
  g_assert_cmpint (type, ==, GRAFT_ATTR_FLOATS);
  g_assert_false (graft_attribute_type_from_name ("tensor", &type, &error));
  g_assert_nonnull (strstr (error->message, "unknown attribute type 'tensor'"));

  g_assert_cmpint (graft_attribute_value_guess_type ("3"), ==, GRAFT_ATTR_INT);
  g_assert_cmpint (graft_attribute_value_guess_type ("-7"), ==, GRAFT_ATTR_INT);
  g_assert_cmpint (graft_attribute_value_guess_type ("0.5"), ==, GRAFT_ATTR_FLOAT);
  g_assert_cmpint (graft_attribute_value_guess_type ("1e-3"), ==, GRAFT_ATTR_FLOAT);
  g_assert_cmpint (graft_attribute_value_guess_type ("relu"), ==, GRAFT_ATTR_STRING);
  g_assert_cmpint (graft_attribute_value_guess_type ("1,2"), ==, GRAFT_ATTR_STRING);
  g_assert_cmpint (graft_attribute_value_guess_type ("[1, 2]"), ==, GRAFT_ATTR_INTS);
  g_assert_cmpint (graft_attribute_value_guess_type ("[1, 2.5]"), ==, GRAFT_ATTR_FLOATS);
  g_assert_cmpint (graft_attribute_value_guess_type ("[a, 2]"), ==, GRAFT_ATTR_STRINGS);
  g_assert_cmpint (graft_attribute_value_guess_type ("[]"), ==, GRAFT_ATTR_INTS);
}

static void
test_scalars (void)
{
  g_autoptr(GError) error = NULL;
  GraftAttribute *attribute;

  attribute = graft_attribute_value_parse ("axis", GRAFT_ATTR_INT, "-1", &error);
  g_assert_no_error (error);
  g_assert_cmpint (attribute->type, ==, GRAFT_ATTR_INT);
  g_assert_cmpint (attribute->i, ==, -1);
  graft_attribute_free (attribute);

  attribute = graft_attribute_value_parse ("alpha", GRAFT_ATTR_FLOAT, "2", &error);
  g_assert_cmpfloat (attribute->f, ==, 2.0);
  graft_attribute_free (attribute);

  attribute = graft_attribute_value_parse ("mode", GRAFT_ATTR_STRING, "constant:x", &error);
  g_assert_cmpmem (g_bytes_get_data (attribute->s, NULL), g_bytes_get_size (attribute->s), "constant:x", 10);
  graft_attribute_free (attribute);

  g_assert_null (graft_attribute_value_parse ("axis", GRAFT_ATTR_INT, "1.5", &error));
  g_assert_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID);
  g_assert_cmpstr (error->message, ==, "attribute 'axis' is an int; '1.5' is not");
  g_clear_error (&error);
  g_assert_null (graft_attribute_value_parse ("alpha", GRAFT_ATTR_FLOAT, "", &error));
  g_assert_cmpstr (error->message, ==, "attribute 'alpha' is a float; '' is not");
  g_clear_error (&error);
  g_assert_null (graft_attribute_value_parse ("body", GRAFT_ATTR_GRAPH, "x", &error));
  g_assert_nonnull (strstr (error->message, "cannot be set from text"));
}

static void
test_lists (void)
{
  g_autoptr(GError) error = NULL;
  GraftAttribute *attribute;

  attribute = graft_attribute_value_parse ("perm", GRAFT_ATTR_INTS, "[0, 2, 1]", &error);
  g_assert_no_error (error);
  g_assert_cmpuint (attribute->ints->len, ==, 3);
  g_assert_cmpint (g_array_index (attribute->ints, gint64, 1), ==, 2);
  graft_attribute_free (attribute);

  /* Brackets are optional, spaces around items are not kept. */
  attribute = graft_attribute_value_parse ("scales", GRAFT_ATTR_FLOATS, " 1, 1.5 ,2 ", &error);
  g_assert_cmpuint (attribute->floats->len, ==, 3);
  g_assert_cmpfloat (g_array_index (attribute->floats, double, 1), ==, 1.5);
  graft_attribute_free (attribute);

  attribute = graft_attribute_value_parse ("pads", GRAFT_ATTR_INTS, "[]", &error);
  g_assert_cmpuint (attribute->ints->len, ==, 0);
  graft_attribute_free (attribute);

  attribute = graft_attribute_value_parse ("names", GRAFT_ATTR_STRINGS, "[a, b c]", &error);
  g_assert_cmpuint (attribute->strings->len, ==, 2);
  g_assert_cmpmem (g_bytes_get_data (g_ptr_array_index (attribute->strings, 1), NULL), 3, "b c", 3);
  graft_attribute_free (attribute);

  g_assert_null (graft_attribute_value_parse ("perm", GRAFT_ATTR_INTS, "[0, x]", &error));
  g_assert_cmpstr (error->message, ==, "attribute 'perm': element 1 ('x') is not an integer");
  g_clear_error (&error);
  g_assert_null (graft_attribute_value_parse ("scales", GRAFT_ATTR_FLOATS, "[1, ]", &error));
  g_assert_cmpstr (error->message, ==, "attribute 'scales': element 1 ('') is not a number");
}

static void
test_list_helpers (void)
{
  g_auto(GStrv) items = graft_attribute_value_split_list (" [0.5, 1 ,2] ");
  g_auto(GStrv) none = graft_attribute_value_split_list ("[ ]");
  double value = 0;

  g_assert_cmpuint (g_strv_length (items), ==, 3);
  g_assert_cmpstr (items[1], ==, "1");
  g_assert_cmpuint (g_strv_length (none), ==, 0);
  g_assert_true (graft_attribute_value_read_float ("1e-3", &value));
  g_assert_cmpfloat (value, ==, 1e-3);
  g_assert_true (graft_attribute_value_read_float ("7", &value));
  g_assert_false (graft_attribute_value_read_float ("", &value));
  g_assert_false (graft_attribute_value_read_float ("1x", &value));
}

/* graft-cli's --attr NODE:NAME=VALUE and the window's dialog (the node as
 * target, NAME=VALUE typed) read into the same parameters. */
static void
test_cli_and_window_forms (void)
{
  const GraftEditOperation *set = graft_edit_operation_lookup ("set-attribute");
  g_autoptr(GVariant) from_cli = NULL, from_window = NULL, refused = NULL;
  g_autoptr(GError) error = NULL;

  g_assert_nonnull (set);
  g_assert_cmpstr (set->option, ==, "--attr");
  from_cli = g_variant_ref_sink (graft_edit_operation_parse (set, NULL, NULL, "a:b/c:alpha=float:0.5", &error));
  g_assert_no_error (error);
  from_window = g_variant_ref_sink (graft_edit_operation_parse (set, NULL, "a:b/c", "alpha = float:0.5", &error));
  g_assert_no_error (error);
  g_assert_true (g_variant_equal (from_cli, from_window));
  g_assert_cmpstr (graft_edit_param_string (from_cli, "node"), ==, "a:b/c");
  g_assert_cmpstr (graft_edit_param_string (from_cli, "name"), ==, "alpha");
  g_assert_cmpstr (graft_edit_param_string (from_cli, "type"), ==, "float");
  g_assert_cmpstr (graft_edit_param_string (from_cli, "value"), ==, "0.5");

  refused = graft_edit_operation_parse (set, NULL, "n", "nonsense", &error);
  g_assert_null (refused);
  g_assert_cmpstr (error->message, ==, "attribute 'nonsense' is not NAME=[TYPE:]VALUE");
  g_clear_error (&error);
  g_assert_null (graft_edit_operation_parse (set, NULL, NULL, "no-node-here=1", &error));
  g_assert_cmpstr (error->message, ==, "“no-node-here=1” is not NODE:NAME=[TYPE:]VALUE");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/attribute-value/assignments", test_assignments);
  g_test_add_func ("/attribute-value/types", test_types);
  g_test_add_func ("/attribute-value/scalars", test_scalars);
  g_test_add_func ("/attribute-value/lists", test_lists);
  g_test_add_func ("/attribute-value/list-helpers", test_list_helpers);
  g_test_add_func ("/attribute-value/cli-and-window-forms", test_cli_and_window_forms);
  return g_test_run ();
}
