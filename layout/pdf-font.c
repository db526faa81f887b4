#include "layout/pdf-font.h"

#include <string.h>
#include <cairo-ft.h>
#include <fontconfig/fcfreetype.h>
#include <gio/gio.h>
#include FT_ADVANCES_H
#include FT_TRUETYPE_TAGS_H
#include FT_TRUETYPE_TABLES_H
#include "layout/decimal.h"

/* The tables a TrueType font in a PDF needs (the PDF reference's list for
 * FontFile2): outlines, metrics and the hinting programs the outlines call.
 * cmap, names and the rest are left out: the PDF maps codes to glyphs. In
 * the order of their tags, as a font's table directory lists them. */
static const FT_ULong subset_tables[] = {
  TTAG_cvt, TTAG_fpgm, TTAG_glyf, TTAG_head, TTAG_hhea, TTAG_hmtx, TTAG_loca, TTAG_maxp, TTAG_prep,
};

struct _GraftPdfFont {
  cairo_scaled_font_t *scaled_font;  /* keeps the face; locked to read it */
  char *postscript_name;
  FT_Long style_flags;
  guint units_per_em;
  guint n_glyphs;
  gboolean truetype;
  GBytes *file;                      /* CFF fonts: the whole file */
  GBytes *tables[G_N_ELEMENTS (subset_tables)];
  guint n_metrics;                   /* hhea.numberOfHMetrics */
  int bbox[4];
  int ascent, descent, cap_height;
  double italic_angle;

  gint32 ascii_glyphs[128];          /* glyph of each ASCII character, -1 until looked up */
  GHashTable *glyphs;                /* other characters → glyph + 1 */
  gunichar *glyph_chars;             /* by glyph: the character it was used for, 0 if unused */
};

static guint
get16 (const guint8 *data)
{
  return (guint) data[0] << 8 | data[1];
}

static guint32
get32 (const guint8 *data)
{
  return (guint32) data[0] << 24 | (guint32) data[1] << 16 | (guint32) data[2] << 8 | data[3];
}

static void
put16 (guint8 *data, guint value)
{
  data[0] = (guint8) (value >> 8);
  data[1] = (guint8) value;
}

static void
put32 (guint8 *data, guint32 value)
{
  put16 (data, value >> 16);
  put16 (data + 2, value & 0xffff);
}

/* A table of the face (tag 0: the whole file), or NULL if it has none. */
static GBytes *
load_table (FT_Face face, FT_ULong tag)
{
  FT_ULong length = 0;
  guint8 *data;

  if (FT_Load_Sfnt_Table (face, tag, 0, NULL, &length) != 0 || length == 0)
    return NULL;
  data = g_malloc (length);
  if (FT_Load_Sfnt_Table (face, tag, 0, data, &length) != 0)
    {
      g_free (data);
      return NULL;
    }
  return g_bytes_new_take (data, length);
}

static GBytes *
get_table (GraftPdfFont *font, FT_ULong tag)
{
  for (gsize i = 0; i < G_N_ELEMENTS (subset_tables); i++)
    if (subset_tables[i] == tag)
      return font->tables[i];
  g_return_val_if_reached (NULL);
}

static const guint8 *
table_data (GraftPdfFont *font, FT_ULong tag, gsize min_size)
{
  GBytes *table = get_table (font, tag);
  gsize size;
  const guint8 *data;

  if (table == NULL)
    return NULL;
  data = g_bytes_get_data (table, &size);
  return size >= min_size ? data : NULL;
}

static char *
postscript_name_of (FT_Face face)
{
  const char *name = FT_Get_Postscript_Name (face);

  if (name != NULL)
    return g_strdup (name);
  /* A name is required; spaces are not allowed in it. */
  return g_strdelimit (g_strdup_printf ("%s-%s", face->family_name ? face->family_name : "Font",
                                        face->style_name ? face->style_name : "Regular"), " ", '-');
}

static FT_Face
lock_face (cairo_t *cr, cairo_scaled_font_t **scaled_font)
{
  *scaled_font = cairo_get_scaled_font (cr);
  if (cairo_scaled_font_status (*scaled_font) != CAIRO_STATUS_SUCCESS
      || cairo_scaled_font_get_type (*scaled_font) != CAIRO_FONT_TYPE_FT)
    return NULL;
  return cairo_ft_scaled_font_lock_face (*scaled_font);
}

/* Reads what the font's dictionaries need from its tables, checking that
 * the TrueType ones are there and large enough. */
static gboolean
read_metrics (GraftPdfFont *font, FT_Face face)
{
  TT_OS2 *os2 = FT_Get_Sfnt_Table (face, FT_SFNT_OS2);
  TT_Postscript *post = FT_Get_Sfnt_Table (face, FT_SFNT_POST);

  font->units_per_em = face->units_per_EM > 0 ? face->units_per_EM : 1000;
  font->n_glyphs = (guint) face->num_glyphs;
  font->bbox[0] = face->bbox.xMin;
  font->bbox[1] = face->bbox.yMin;
  font->bbox[2] = face->bbox.xMax;
  font->bbox[3] = face->bbox.yMax;
  font->ascent = face->ascender;
  font->descent = face->descender;
  font->cap_height = os2 != NULL && os2->version >= 2 && os2->sCapHeight > 0 ? os2->sCapHeight : face->ascender;
  font->italic_angle = post != NULL ? post->italicAngle / 65536.0 : 0;
  if (!font->truetype)
    return TRUE;
  {
    const guint8 *head = table_data (font, TTAG_head, 54);
    const guint8 *hhea = table_data (font, TTAG_hhea, 36);
    const guint8 *maxp = table_data (font, TTAG_maxp, 6);
    gsize loca_size = 0, hmtx_size = 0;

    if (head == NULL || hhea == NULL || maxp == NULL || get_table (font, TTAG_loca) == NULL
        || get_table (font, TTAG_hmtx) == NULL)
      return FALSE;
    g_bytes_get_data (get_table (font, TTAG_loca), &loca_size);
    g_bytes_get_data (get_table (font, TTAG_hmtx), &hmtx_size);
    font->n_glyphs = get16 (maxp + 4);
    font->n_metrics = get16 (hhea + 34);
    return font->n_glyphs > 0 && font->n_metrics > 0 && font->n_metrics <= font->n_glyphs
           && hmtx_size >= font->n_metrics * 4
           && loca_size >= (font->n_glyphs + 1) * (get16 (head + 50) == 0 ? 2u : 4u);
  }
}

GraftPdfFont *
graft_pdf_font_new (cairo_t *cr, GError **error)
{
  g_autoptr (GraftPdfFont) font = g_new0 (GraftPdfFont, 1);
  cairo_scaled_font_t *scaled_font;
  FT_Face face = lock_face (cr, &scaled_font);
  gboolean readable;

  if (face == NULL)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "the text's font is not a FreeType font");
      return NULL;
    }
  font->scaled_font = cairo_scaled_font_reference (scaled_font);
  font->postscript_name = postscript_name_of (face);
  font->style_flags = face->style_flags;
  font->glyphs = g_hash_table_new (g_direct_hash, g_direct_equal);
  memset (font->ascii_glyphs, 0xff, sizeof font->ascii_glyphs);
  if (FT_IS_SFNT (face))
    {
      for (gsize i = 0; i < G_N_ELEMENTS (subset_tables); i++)
        font->tables[i] = load_table (face, subset_tables[i]);
      font->truetype = get_table (font, TTAG_glyf) != NULL;
      if (!font->truetype)
        font->file = load_table (face, 0);
      /* A collection (.ttc, .otc) is no OpenType font program: a CFF face
       * of one is left to cairo (TrueType faces are rebuilt from their
       * tables, which FreeType reads from the right face). */
      if (font->file != NULL && g_bytes_get_size (font->file) >= 4
          && memcmp (g_bytes_get_data (font->file, NULL), "ttcf", 4) == 0)
        g_clear_pointer (&font->file, g_bytes_unref);
    }
  readable = FT_IS_SFNT (face) && (font->truetype || font->file != NULL) && read_metrics (font, face);
  cairo_ft_scaled_font_unlock_face (scaled_font);
  if (!readable)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
                   "the text's font %s is not a TrueType or OpenType font", font->postscript_name);
      return NULL;
    }
  font->glyph_chars = g_new0 (gunichar, font->n_glyphs);
  return g_steal_pointer (&font);
}

void
graft_pdf_font_free (GraftPdfFont *font)
{
  if (font == NULL)
    return;
  g_clear_pointer (&font->scaled_font, cairo_scaled_font_destroy);
  g_free (font->postscript_name);
  g_clear_pointer (&font->file, g_bytes_unref);
  for (gsize i = 0; i < G_N_ELEMENTS (subset_tables); i++)
    g_clear_pointer (&font->tables[i], g_bytes_unref);
  g_clear_pointer (&font->glyphs, g_hash_table_unref);
  g_free (font->glyph_chars);
  g_free (font);
}

gboolean
graft_pdf_font_is_face_of (GraftPdfFont *font, cairo_t *cr)
{
  cairo_scaled_font_t *scaled_font;
  FT_Face face = lock_face (cr, &scaled_font);
  g_autofree char *name = NULL;

  if (face == NULL)
    return FALSE;
  /* Not the FT_Face pointers: cairo closes faces past a few open ones. */
  name = postscript_name_of (face);
  cairo_ft_scaled_font_unlock_face (scaled_font);
  return strcmp (name, font->postscript_name) == 0;
}

gboolean
graft_pdf_font_lacks_bold (GraftPdfFont *font, cairo_t *cr)
{
  cairo_font_face_t *face = cairo_get_font_face (cr);

  return cairo_font_face_get_type (face) == CAIRO_FONT_TYPE_TOY
         && cairo_toy_font_face_get_weight (face) == CAIRO_FONT_WEIGHT_BOLD
         && !(font->style_flags & FT_STYLE_FLAG_BOLD);
}

gboolean
graft_pdf_font_lacks_italic (GraftPdfFont *font, cairo_t *cr)
{
  cairo_font_face_t *face = cairo_get_font_face (cr);

  return cairo_font_face_get_type (face) == CAIRO_FONT_TYPE_TOY
         && cairo_toy_font_face_get_slant (face) != CAIRO_FONT_SLANT_NORMAL
         && !(font->style_flags & FT_STYLE_FLAG_ITALIC);
}

/* The glyph cairo's FreeType backend draws c with (it maps characters
 * through fontconfig too); 0, the missing glyph, if the font has none. */
static guint
glyph_of (GraftPdfFont *font, gunichar c)
{
  gpointer found;
  guint glyph = 0;
  FT_Face face;

  if (c < G_N_ELEMENTS (font->ascii_glyphs) && font->ascii_glyphs[c] >= 0)
    return (guint) font->ascii_glyphs[c];
  if (c >= G_N_ELEMENTS (font->ascii_glyphs) && (found = g_hash_table_lookup (font->glyphs, GUINT_TO_POINTER (c))))
    return GPOINTER_TO_UINT (found) - 1;
  face = cairo_ft_scaled_font_lock_face (font->scaled_font);
  if (face != NULL)
    {
      glyph = FcFreeTypeCharIndex (face, c);
      cairo_ft_scaled_font_unlock_face (font->scaled_font);
    }
  if (glyph >= font->n_glyphs)
    glyph = 0;
  if (c < G_N_ELEMENTS (font->ascii_glyphs))
    font->ascii_glyphs[c] = (gint32) glyph;
  else
    g_hash_table_insert (font->glyphs, GUINT_TO_POINTER (c), GUINT_TO_POINTER (glyph + 1));
  return glyph;
}

void
graft_pdf_font_append_text (GraftPdfFont *font, GString *out, const char *text)
{
  static const char hex[] = "0123456789ABCDEF";
  g_autofree char *valid = NULL;

  if (!g_utf8_validate (text, -1, NULL))
    text = valid = g_utf8_make_valid (text, -1);
  g_string_append_c (out, '<');
  for (const char *c = text; *c != '\0'; c = g_utf8_next_char (c))
    {
      gunichar u = g_utf8_get_char (c);
      guint glyph = glyph_of (font, u);
      char code[4] = { hex[glyph >> 12 & 15], hex[glyph >> 8 & 15], hex[glyph >> 4 & 15], hex[glyph & 15] };

      if (glyph != 0 && font->glyph_chars[glyph] == 0)
        font->glyph_chars[glyph] = u;
      g_string_append_len (out, code, 4);
    }
  g_string_append_c (out, '>');
}

static double
per_mille (GraftPdfFont *font, double units)
{
  return units * 1000.0 / font->units_per_em;
}

/* A 6-letter tag naming this subset: PDF wants a subset's name prefixed
 * with one, different for different subsets of a font. */
static void
append_subset_tag (GraftPdfFont *font, GString *out)
{
  guint32 hash = 5381;

  for (guint glyph = 0; glyph < font->n_glyphs; glyph++)
    if (font->glyph_chars[glyph] != 0)
      hash = hash * 33 + glyph;
  for (int i = 0; i < 6; i++, hash /= 26)
    g_string_append_c (out, (char) ('A' + hash % 26));
  g_string_append_c (out, '+');
}

void
graft_pdf_font_get_info (GraftPdfFont *font, GraftPdfFontInfo *info)
{
  GString *name = g_string_new (NULL);

  if (font->truetype)
    append_subset_tag (font, name);
  g_string_append (name, font->postscript_name);
  info->name = g_string_free (name, FALSE);
  info->truetype = font->truetype;
  for (int i = 0; i < 4; i++)
    info->bbox[i] = per_mille (font, font->bbox[i]);
  info->ascent = per_mille (font, font->ascent);
  info->descent = per_mille (font, font->descent);
  info->cap_height = per_mille (font, font->cap_height);
  info->italic_angle = font->italic_angle;
  info->italic = (font->style_flags & FT_STYLE_FLAG_ITALIC) != 0;
}

void
graft_pdf_font_info_clear (GraftPdfFontInfo *info)
{
  g_clear_pointer (&info->name, g_free);
}

/* The glyph's advance in font units, as its hmtx entry has it (cairo draws
 * with metric hinting off, so these unscaled advances are what it uses). */
static guint
advance_of (GraftPdfFont *font, guint glyph)
{
  const guint8 *hmtx = table_data (font, TTAG_hmtx, 4);
  FT_Face face;
  FT_Fixed advance = 0;

  if (hmtx != NULL && font->truetype)
    return get16 (hmtx + 4 * MIN (glyph, font->n_metrics - 1));
  /* CFF fonts: FreeType reads the advance from hmtx too. */
  face = cairo_ft_scaled_font_lock_face (font->scaled_font);
  if (face != NULL)
    {
      FT_Get_Advance (face, glyph, FT_LOAD_NO_SCALE, &advance);
      cairo_ft_scaled_font_unlock_face (font->scaled_font);
    }
  return (guint) advance;
}

void
graft_pdf_font_append_widths (GraftPdfFont *font, GString *out)
{
  gboolean open = FALSE;

  g_string_append_c (out, '[');
  for (guint glyph = 0; glyph < font->n_glyphs; glyph++)
    {
      if (font->glyph_chars[glyph] == 0 && glyph != 0)
        {
          if (open)
            g_string_append (out, "]\n");
          open = FALSE;
          continue;
        }
      if (!open)
        g_string_append_printf (out, "%u [", glyph);
      else
        g_string_append_c (out, ' ');
      graft_decimal_append (out, per_mille (font, advance_of (font, glyph)), 3);
      open = TRUE;
    }
  if (open)
    g_string_append_c (out, ']');
  g_string_append_c (out, ']');
}

static void
append_utf16 (GString *out, gunichar c)
{
  gunichar2 units[2];
  int n = 0;

  if (c >= 0x10000)
    {
      units[n++] = (gunichar2) (0xd800 + ((c - 0x10000) >> 10));
      units[n++] = (gunichar2) (0xdc00 + ((c - 0x10000) & 0x3ff));
    }
  else
    units[n++] = (gunichar2) c;
  for (int i = 0; i < n; i++)
    g_string_append_printf (out, "%04X", units[i]);
}

void
graft_pdf_font_append_to_unicode (GraftPdfFont *font, GString *out)
{
  /* A CMap may hold at most 100 mappings per bfchar block. */
  enum { BLOCK = 100 };
  guint n_used = 0, in_block = 0;

  for (guint glyph = 1; glyph < font->n_glyphs; glyph++)
    n_used += font->glyph_chars[glyph] != 0;
  g_string_append (out, "/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n"
                        "/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def\n"
                        "/CMapName /Adobe-Identity-UCS def\n/CMapType 2 def\n"
                        "1 begincodespacerange\n<0000> <FFFF>\nendcodespacerange\n");
  for (guint glyph = 1; glyph < font->n_glyphs; glyph++)
    {
      if (font->glyph_chars[glyph] == 0)
        continue;
      if (in_block == 0)
        g_string_append_printf (out, "%u beginbfchar\n", MIN (n_used, BLOCK));
      g_string_append_printf (out, "<%04X> <", glyph);
      append_utf16 (out, font->glyph_chars[glyph]);
      g_string_append (out, ">\n");
      n_used--;
      if (++in_block == BLOCK || n_used == 0)
        {
          g_string_append (out, "endbfchar\n");
          in_block = 0;
        }
    }
  g_string_append (out, "endcmap\nCMapName currentdict /CMap defineresource pop\nend\nend\n");
}

/* Offset and length of glyph's outline in glyf, from loca. */
static gboolean
glyph_span (GraftPdfFont *font, guint glyph, gsize *start, gsize *length)
{
  const guint8 *head = table_data (font, TTAG_head, 54);
  const guint8 *loca = table_data (font, TTAG_loca, 0);
  gsize glyf_size = 0;
  gsize end;

  g_bytes_get_data (get_table (font, TTAG_glyf), &glyf_size);
  if (get16 (head + 50) == 0)
    {
      *start = get16 (loca + 2 * glyph) * 2;
      end = get16 (loca + 2 * glyph + 2) * 2;
    }
  else
    {
      *start = get32 (loca + 4 * glyph);
      end = get32 (loca + 4 * glyph + 4);
    }
  if (end < *start || end > glyf_size)
    return FALSE;
  *length = end - *start;
  return TRUE;
}

/* Marks glyph and, for a composite one, the glyphs it is made of. */
static void
keep_glyph (GraftPdfFont *font, guint glyph, guint8 *kept)
{
  const guint8 *glyf = table_data (font, TTAG_glyf, 0);
  gsize start, length, at;

  if (glyph >= font->n_glyphs || kept[glyph])
    return;
  kept[glyph] = TRUE;
  if (!glyph_span (font, glyph, &start, &length) || length < 10 || (gint16) get16 (glyf + start) >= 0)
    return;
  /* A composite: component records from byte 10 on. */
  for (at = 10; at + 4 <= length;)
    {
      guint flags = get16 (glyf + start + at);

      keep_glyph (font, get16 (glyf + start + at + 2), kept);
      at += 4 + ((flags & 0x0001) ? 4 : 2);  /* ARG_1_AND_2_ARE_WORDS */
      if (flags & 0x0008)                   /* WE_HAVE_A_SCALE */
        at += 2;
      else if (flags & 0x0040)              /* WE_HAVE_AN_X_AND_Y_SCALE */
        at += 4;
      else if (flags & 0x0080)              /* WE_HAVE_A_TWO_BY_TWO */
        at += 8;
      if (!(flags & 0x0020))                /* MORE_COMPONENTS */
        break;
    }
}

static guint32
checksum (const guint8 *data, gsize length)
{
  guint32 sum = 0;

  for (gsize i = 0; i < length; i += 4)
    {
      guint8 word[4] = { 0 };

      memcpy (word, data + i, MIN (4, length - i));
      sum += get32 (word);
    }
  return sum;
}

/* A TrueType font with the same glyph numbers, whose unused glyphs have no
 * outline: their numbers stay, so a glyph's number is still its CID. */
static GBytes *
dup_truetype_subset (GraftPdfFont *font)
{
  const guint8 *glyf = table_data (font, TTAG_glyf, 0);
  g_autofree guint8 *kept = g_new0 (guint8, font->n_glyphs);
  g_autoptr (GByteArray) new_glyf = g_byte_array_new ();
  g_autoptr (GByteArray) new_loca = g_byte_array_sized_new ((font->n_glyphs + 1) * 4);
  g_autoptr (GByteArray) new_head = NULL;
  g_autoptr (GByteArray) file = g_byte_array_new ();
  g_autoptr (GByteArray) contents = g_byte_array_new ();  /* the tables after the directory */
  GBytes *tables[G_N_ELEMENTS (subset_tables)];
  guint n_tables = 0;
  gsize head_size;
  const guint8 *head = g_bytes_get_data (get_table (font, TTAG_head), &head_size);
  static const guint8 zeros[4] = { 0 };
  guint8 entry[16];
  guint search_range = 1, entry_selector = 0;

  keep_glyph (font, 0, kept);
  for (guint glyph = 1; glyph < font->n_glyphs; glyph++)
    if (font->glyph_chars[glyph] != 0)
      keep_glyph (font, glyph, kept);
  for (guint glyph = 0; glyph <= font->n_glyphs; glyph++)
    {
      gsize start, length;

      put32 (entry, new_glyf->len);
      g_byte_array_append (new_loca, entry, 4);
      if (glyph < font->n_glyphs && kept[glyph] && glyph_span (font, glyph, &start, &length))
        {
          g_byte_array_append (new_glyf, glyf + start, length);
          g_byte_array_append (new_glyf, zeros, (4 - length % 4) % 4);
        }
    }
  /* Long offsets in loca; the whole-file checksum is left to readers that
   * want it (none do for embedded fonts). */
  new_head = g_byte_array_new ();
  g_byte_array_append (new_head, head, head_size);
  put32 (new_head->data + 8, 0);
  put16 (new_head->data + 50, 1);

  for (gsize i = 0; i < G_N_ELEMENTS (subset_tables); i++)
    {
      if (subset_tables[i] == TTAG_glyf)
        tables[i] = g_bytes_new (new_glyf->data, new_glyf->len);
      else if (subset_tables[i] == TTAG_loca)
        tables[i] = g_bytes_new (new_loca->data, new_loca->len);
      else if (subset_tables[i] == TTAG_head)
        tables[i] = g_bytes_new (new_head->data, new_head->len);
      else
        tables[i] = font->tables[i] != NULL ? g_bytes_ref (font->tables[i]) : NULL;
      n_tables += tables[i] != NULL;
    }

  /* The offset table, then the directory, then the tables, each padded to
   * four bytes. */
  while (search_range * 2 <= n_tables)
    search_range *= 2, entry_selector++;
  put32 (entry, 0x00010000);
  put16 (entry + 4, n_tables);
  put16 (entry + 6, search_range * 16);
  put16 (entry + 8, entry_selector);
  put16 (entry + 10, n_tables * 16 - search_range * 16);
  g_byte_array_append (file, entry, 12);
  for (gsize i = 0; i < G_N_ELEMENTS (subset_tables); i++)
    {
      gsize size;
      const guint8 *data;

      if (tables[i] == NULL)
        continue;
      data = g_bytes_get_data (tables[i], &size);
      put32 (entry, (guint32) subset_tables[i]);
      put32 (entry + 4, checksum (data, size));
      put32 (entry + 8, 12 + 16 * n_tables + contents->len);
      put32 (entry + 12, (guint32) size);
      g_byte_array_append (file, entry, 16);
      g_byte_array_append (contents, data, size);
      g_byte_array_append (contents, zeros, (4 - size % 4) % 4);
      g_bytes_unref (tables[i]);
    }
  g_byte_array_append (file, contents->data, contents->len);
  return g_byte_array_free_to_bytes (g_steal_pointer (&file));
}

GBytes *
graft_pdf_font_dup_program (GraftPdfFont *font)
{
  if (!font->truetype)
    return g_bytes_ref (font->file);
  return dup_truetype_subset (font);
}
