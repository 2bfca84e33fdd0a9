"""Small PDF and Word files written at test time (issue 66): a PDF of text lines placed by hand in the standard fonts
(Helvetica, Helvetica-Bold: no font file embedded), and a Word file built with python-docx, with a footnote part."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

#: A4 in points.
WIDTH, HEIGHT = 595, 842


@dataclass
class Text:
    x: float
    y: float  # from the top of the page, as one reads (the PDF's own y grows upwards)
    text: str
    size: float = 10
    bold: bool = False
    rise: float = 0  # a superscript: raised this many points (and set in its own size)


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _stream(items: list[Text]) -> bytes:
    ops = []
    for t in items:
        font = "F2" if t.bold else "F1"
        ops.append(f"BT /{font} {t.size} Tf {t.rise} Ts 1 0 0 1 {t.x} {HEIGHT - t.y} Tm ({_escape(t.text)}) Tj ET")
    return "\n".join(ops).encode("latin-1")


def write_pdf(path: Path, pages: list[list[Text]], *, image_only: bool = False, encrypted: bool = False) -> Path:
    """A PDF of ``pages``, each a list of :class:`Text` runs (WinAnsi text). ``image_only``: every page a filled
    rectangle and no text (what a scan's text layer is); ``encrypted``: a standard security handler whose empty
    user password does not open it."""
    objects: list[bytes] = [b"", b""]  # 1: catalog, 2: pages (filled below)
    fonts = []
    for name in ("Helvetica", "Helvetica-Bold"):
        objects.append(f"<< /Type /Font /Subtype /Type1 /BaseFont /{name} /Encoding /WinAnsiEncoding >>".encode())
        fonts.append(len(objects))
    kids = []
    for items in pages:
        content = b"0.5 g 50 50 495 742 re f" if image_only else _stream(items)
        objects.append(b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream")
        objects.append((f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {WIDTH} {HEIGHT}] /Contents {len(objects)} 0 R "
                        f"/Resources << /Font << /F1 {fonts[0]} 0 R /F2 {fonts[1]} 0 R >> >> >>").encode())
        kids.append(len(objects))
    objects[0] = b"<< /Type /Catalog /Pages 2 0 R >>"
    objects[1] = f"<< /Type /Pages /Kids [{' '.join(f'{k} 0 R' for k in kids)}] /Count {len(kids)} >>".encode()
    trailer = f"/Size {len(objects) + 1} /Root 1 0 R"
    if encrypted:
        objects.append(b"<< /Filter /Standard /V 1 /R 2 /Length 40 /P -4 /O <" + b"11" * 32 + b"> /U <"
                       + b"22" * 32 + b"> >>")
        trailer += f" /Encrypt {len(objects)} 0 R /ID [<{'ab' * 16}> <{'ab' * 16}>]"
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for i, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += f"trailer\n<< {trailer} >>\nstartxref\n{xref}\n%%EOF\n".encode()
    path.write_bytes(bytes(out))
    return path


FOOTNOTES_XML = (
    '<w:footnotes xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
    '<w:footnote w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:footnote>'
    '<w:footnote w:id="1"><w:p><w:r><w:t>{text}</w:t></w:r></w:p></w:footnote></w:footnotes>')


def add_footnote(document, paragraph, text: str) -> None:
    """A footnote reference at the end of ``paragraph`` and the footnote part holding its ``text`` (one a file)."""
    from docx.opc.constants import RELATIONSHIP_TYPE
    from docx.opc.packuri import PackURI
    from docx.opc.part import Part
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    part = Part(PackURI("/word/footnotes.xml"),
                "application/vnd.openxmlformats-officedocument.wordprocessingml.footnotes+xml",
                FOOTNOTES_XML.format(text=text).encode("utf-8"), document.part.package)
    document.part.relate_to(part, RELATIONSHIP_TYPE.FOOTNOTES)
    ref = OxmlElement("w:footnoteReference")
    ref.set(qn("w:id"), "1")
    paragraph.add_run()._r.append(ref)
