/* A bounded reader of FlatBuffers binaries, for the ExecuTorch program
 * reader: no schema compiler, no library. Every offset, vtable, vector
 * and string is checked to lie inside the buffer before it is read, so a
 * hostile file gets an error naming the object and the byte offset, never
 * a read outside the bytes given. Offsets between tables are unsigned and
 * point forward, so following them cannot loop; a vector's length is
 * bounded by the bytes left after it, so no count from the file sizes an
 * allocation beyond the file's own size.
 *
 * Layout facts (flatbuffers.dev, "internals"): a table starts with an
 * int32 soffset to its vtable (vtable = table - soffset); the vtable is
 * uint16 vtable size, uint16 table size, then one uint16 offset per field
 * in declaration order (0: absent, the default applies), a union taking
 * two slots (its type byte, then its table). References are uint32
 * offsets relative to where they are stored. Vectors are a uint32 length
 * followed by the elements; strings are byte vectors with a NUL after. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct {
  const guint8 *data;
  gsize size;
  const char *path;     /* for messages */
} GraftFlatbuffer;

typedef struct {
  gsize position;       /* of the table; 0: absent */
  gsize vtable;
  guint16 vtable_size;
  guint16 table_size;
} GraftFlatbufferTable;

typedef struct {
  gsize position;       /* of the first element */
  guint32 length;       /* elements; 0 for an absent vector */
} GraftFlatbufferVector;

/* The root table; checks the buffer is long enough for the identifier. */
gboolean graft_flatbuffer_root (const GraftFlatbuffer *fb, GraftFlatbufferTable *root, GError **error);

gboolean graft_flatbuffer_table_present (const GraftFlatbufferTable *table);

/* Scalars: the field's value, or fallback when the field is absent. A
 * field that lies past its table's end is an error. */
gboolean graft_flatbuffer_read_u8 (const GraftFlatbuffer *fb, const GraftFlatbufferTable *table, guint field,
                                   const char *what, guint8 fallback, guint8 *value, GError **error);
gboolean graft_flatbuffer_read_i32 (const GraftFlatbuffer *fb, const GraftFlatbufferTable *table, guint field,
                                    const char *what, gint32 fallback, gint32 *value, GError **error);
gboolean graft_flatbuffer_read_u32 (const GraftFlatbuffer *fb, const GraftFlatbufferTable *table, guint field,
                                    const char *what, guint32 fallback, guint32 *value, GError **error);
gboolean graft_flatbuffer_read_i64 (const GraftFlatbuffer *fb, const GraftFlatbufferTable *table, guint field,
                                    const char *what, gint64 fallback, gint64 *value, GError **error);
gboolean graft_flatbuffer_read_u64 (const GraftFlatbuffer *fb, const GraftFlatbufferTable *table, guint field,
                                    const char *what, guint64 fallback, guint64 *value, GError **error);
gboolean graft_flatbuffer_read_f64 (const GraftFlatbuffer *fb, const GraftFlatbufferTable *table, guint field,
                                    const char *what, double fallback, double *value, GError **error);

/* A sub-table (absent: position 0). */
gboolean graft_flatbuffer_read_table (const GraftFlatbuffer *fb, const GraftFlatbufferTable *table, guint field,
                                      const char *what, GraftFlatbufferTable *out, GError **error);
/* A vector of element_size-byte elements (absent: length 0). */
gboolean graft_flatbuffer_read_vector (const GraftFlatbuffer *fb, const GraftFlatbufferTable *table, guint field,
                                       gsize element_size, const char *what, GraftFlatbufferVector *out,
                                       GError **error);
/* A string as a new NUL-terminated copy (absent: NULL, no error); one
 * with a NUL inside or that is not UTF-8 is an error. */
gboolean graft_flatbuffer_read_string (const GraftFlatbuffer *fb, const GraftFlatbufferTable *table, guint field,
                                       const char *what, char **out, GError **error);

/* Element index of a vector of tables / of scalars (index < length). */
gboolean graft_flatbuffer_vector_table (const GraftFlatbuffer *fb, const GraftFlatbufferVector *vector, guint index,
                                        const char *what, GraftFlatbufferTable *out, GError **error);
gint32 graft_flatbuffer_vector_i32 (const GraftFlatbuffer *fb, const GraftFlatbufferVector *vector, guint index);
gint64 graft_flatbuffer_vector_i64 (const GraftFlatbuffer *fb, const GraftFlatbufferVector *vector, guint index);
guint64 graft_flatbuffer_vector_u64 (const GraftFlatbuffer *fb, const GraftFlatbufferVector *vector, guint index);
double graft_flatbuffer_vector_f64 (const GraftFlatbuffer *fb, const GraftFlatbufferVector *vector, guint index);
guint8 graft_flatbuffer_vector_u8 (const GraftFlatbuffer *fb, const GraftFlatbufferVector *vector, guint index);

guint32 graft_flatbuffer_get_u32 (const guint8 *p);
guint64 graft_flatbuffer_get_u64 (const guint8 *p);

G_END_DECLS
