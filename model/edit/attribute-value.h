/* The text grammar of attribute values, the one parser that graft-cli
 * edit (--attr, --insert's ;ATTR=V), the window's Set Attribute… dialog
 * and the add-node/insert-node operations read (set-initializer-values
 * reads its numbers as a LIST too):
 *
 *   ASSIGNMENT := NAME '=' [TYPE ':'] VALUE
 *   TYPE       := int | float | string | ints | floats | strings   (any case)
 *   VALUE      := INT | FLOAT | LIST | text
 *   LIST       := '[' ITEM {',' ITEM} ']' | ITEM {',' ITEM} | '' | '[]'
 *
 * A TYPE prefix is one only when it names a type ("mode=constant:x" is a
 * string); without one the type is the attribute's own, the schema's, or
 * guessed from the text: an integer, a number, a bracketed list of
 * integers / numbers / strings, else a string. */
#pragma once

#include "ir/attribute.h"

G_BEGIN_DECLS

/* "alpha = float:0.2" → name "alpha" (stripped), type "float" (NULL when
 * the value has no TYPE prefix), value "0.2" (may be empty); FALSE with an
 * error when there is no '=' or no name. */
gboolean graft_attribute_assignment_parse (const char *text, char **name, char **type, char **value, GError **error);

/* "ints" → GRAFT_ATTR_INTS (any case); FALSE with an error naming the
 * types otherwise. */
gboolean graft_attribute_type_from_name (const char *type_name, GraftAttrType *type, GError **error);

/* A LIST's items, stripped: "[1, 2]", "1,2" → "1", "2"; "" and "[]" → none. */
GStrv graft_attribute_value_split_list (const char *text);
/* A FLOAT (an INT reads as one too); FALSE for anything else, "" included. */
gboolean graft_attribute_value_read_float (const char *text, double *value);

/* The type a VALUE with no TYPE prefix reads as. */
GraftAttrType graft_attribute_value_guess_type (const char *text);

/* The attribute name = text read as type; NULL with an error naming the
 * element that does not read. */
GraftAttribute *graft_attribute_value_parse (const char *name, GraftAttrType type, const char *text, GError **error);

G_END_DECLS
