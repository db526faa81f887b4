/* The font file behind one of the text roles' cairo fonts (text.h), for
 * embedding in a PDF: the glyphs cairo draws each character with, their
 * advances (the widths the layout measured, unhinted), and the font
 * program cut down to the glyphs a document used. TrueType fonts are
 * subset (the other glyphs' outlines emptied, their numbers kept, so a
 * glyph's number is its CID); CFF-flavoured OpenType fonts are embedded
 * whole. */
#pragma once

#include <cairo.h>
#include <glib.h>

G_BEGIN_DECLS

typedef struct _GraftPdfFont GraftPdfFont;

typedef struct {
  char *name;              /* "ABCDEF+DejaVuSans-Bold": the subset's tag and the PostScript name */
  gboolean truetype;       /* glyf outlines (FontFile2); else CFF in OpenType (FontFile3) */
  double bbox[4];          /* in thousandths of an em, y up */
  double ascent, descent, cap_height, italic_angle;
  gboolean italic;
} GraftPdfFontInfo;

/* The font that cr's selected font (a cairo FreeType font, as cairo's toy
 * fonts are on Linux) is drawn from. NULL with G_IO_ERROR_NOT_SUPPORTED if
 * it is not an sfnt (TrueType or OpenType) file. */
GraftPdfFont *graft_pdf_font_new (cairo_t *cr, GError **error);
void graft_pdf_font_free (GraftPdfFont *font);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftPdfFont, graft_pdf_font_free)

/* Whether cr's selected font is drawn from the same face as font. */
gboolean graft_pdf_font_is_face_of (GraftPdfFont *font, cairo_t *cr);

/* Whether the role selected on cr asks for bold or italic that font lacks,
 * which cairo then synthesises. */
gboolean graft_pdf_font_lacks_bold (GraftPdfFont *font, cairo_t *cr);
gboolean graft_pdf_font_lacks_italic (GraftPdfFont *font, cairo_t *cr);

/* Appends text (UTF-8) as a PDF hex string of two-byte glyph numbers,
 * "<00240045>", one glyph per character as cairo's toy text draws it, and
 * notes the glyphs as used. */
void graft_pdf_font_append_text (GraftPdfFont *font, GString *out, const char *text);

/* What the font's dictionaries need, once every text is appended. */
void graft_pdf_font_get_info (GraftPdfFont *font, GraftPdfFontInfo *info);
void graft_pdf_font_info_clear (GraftPdfFontInfo *info);
/* The used glyphs' widths, as a CIDFont's /W array: "[3 [600 550] 9 [278]]". */
void graft_pdf_font_append_widths (GraftPdfFont *font, GString *out);
/* A ToUnicode CMap from the used glyphs to the characters they show, so
 * the text can be selected, searched and copied. */
void graft_pdf_font_append_to_unicode (GraftPdfFont *font, GString *out);
/* The font program: the used glyphs' subset (a TrueType font), or the
 * whole OpenType file. */
GBytes *graft_pdf_font_dup_program (GraftPdfFont *font);

G_END_DECLS
