//! A report as a list of blocks, rendered to Markdown (tables and text) or
//! to one self-contained HTML page (the same, plus inline SVG charts).

/// Text may hold `**bold**` and `` `code` `` spans (the briefs bold each
/// config's peak); markers only count in pairs, and everything else is shown
/// as written, in both formats (labels come from user input).
#[derive(Debug, Clone)]
pub enum Block {
    Heading(u8, String),
    Paragraph(String),
    Table(Table),
    /// Inline SVG documents, shown side by side in HTML only.
    Charts(Vec<String>),
    /// Charts behind a line that opens them (HTML `<details>`, closed);
    /// in HTML only.
    Collapsed(String, Vec<String>),
}

#[derive(Debug, Clone, Default)]
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

#[derive(Debug, Clone, Default)]
pub struct Document {
    pub title: String,
    pub blocks: Vec<Block>,
}

impl Document {
    pub fn to_markdown(&self) -> String {
        let mut out = format!("# {}\n\n", markdown(&self.title, false));
        for block in &self.blocks {
            match block {
                Block::Heading(level, text) => out.push_str(&format!(
                    "{} {}\n\n",
                    "#".repeat(*level as usize + 1),
                    markdown(text, false)
                )),
                Block::Paragraph(text) => out.push_str(&format!("{}\n\n", markdown(text, false))),
                Block::Table(t) => {
                    out.push_str(&markdown_row(&t.header));
                    let align: Vec<String> = (0..t.header.len())
                        .map(|i| if i == 0 { "---".into() } else { "---:".into() })
                        .collect();
                    out.push_str(&markdown_row(&align));
                    for row in &t.rows {
                        out.push_str(&markdown_row(row));
                    }
                    out.push('\n');
                }
                Block::Charts(_) | Block::Collapsed(..) => {}
            }
        }
        out
    }

    pub fn to_html(&self) -> String {
        let mut body = format!("<h1>{}</h1>\n", escape(&self.title));
        for block in &self.blocks {
            match block {
                Block::Heading(level, text) => {
                    let h = level + 1;
                    body.push_str(&format!("<h{h}>{}</h{h}>\n", inline(text)));
                }
                Block::Paragraph(text) => body.push_str(&format!("<p>{}</p>\n", inline(text))),
                Block::Table(t) => {
                    // A wide table scrolls inside its box, not the page.
                    body.push_str("<div class=\"wide\"><table>\n<tr>");
                    for h in &t.header {
                        body.push_str(&format!("<th>{}</th>", inline(h)));
                    }
                    body.push_str("</tr>\n");
                    for row in &t.rows {
                        body.push_str("<tr>");
                        for cell in row {
                            body.push_str(&format!("<td>{}</td>", inline(cell)));
                        }
                        body.push_str("</tr>\n");
                    }
                    body.push_str("</table></div>\n");
                }
                Block::Charts(svgs) => body.push_str(&charts(svgs)),
                Block::Collapsed(summary, svgs) => {
                    body.push_str(&format!(
                        "<details><summary>{}</summary>\n{}</details>\n",
                        inline(summary),
                        charts(svgs)
                    ));
                }
            }
        }
        format!(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n{body}</body>\n</html>\n",
            escape(&self.title)
        )
    }
}

fn charts(svgs: &[String]) -> String {
    let mut html = String::from("<div class=\"charts\">\n");
    for svg in svgs {
        html.push_str(svg);
        html.push('\n');
    }
    html.push_str("</div>\n");
    html
}

/// No fonts, scripts or images from anywhere: the page must open offline.
const STYLE: &str = "body{font-family:sans-serif;margin:2em;color:#222;max-width:1300px}\
.wide{overflow-x:auto;max-width:100%;margin:0.5em 0 1.5em}\
table{border-collapse:collapse}\
th,td{border:1px solid #bbb;padding:3px 9px;text-align:right}\
th:first-child,td:first-child{text-align:left}th{background:#eee}\
.charts{display:flex;flex-wrap:wrap;gap:12px}\
.charts svg{border:1px solid #ddd;background:#fff}\
details{margin:0.3em 0}summary{cursor:pointer}";

fn markdown_row(cells: &[String]) -> String {
    let cells: Vec<String> = cells.iter().map(|c| markdown(c, true)).collect();
    format!("| {} |\n", cells.join(" | "))
}

/// A piece of block text: kvperf's own markup, or text to show as written.
#[derive(Debug, PartialEq)]
enum Span<'a> {
    Text(&'a str),
    /// Opens or closes a bold span.
    Bold,
    Code(&'a str),
}

/// Splits `text` at its `` ` `` and `**` markers, each kind only when its
/// markers pair up; an unpaired one is text.
fn spans(text: &str) -> Vec<Span<'_>> {
    let code_pairs = text.matches('`').count().is_multiple_of(2);
    let parts: Vec<&str> = if code_pairs {
        text.split('`').collect()
    } else {
        vec![text]
    };
    let bold_pairs = parts
        .iter()
        .step_by(2)
        .map(|p| p.matches("**").count())
        .sum::<usize>()
        .is_multiple_of(2);
    let mut out = Vec::new();
    for (i, part) in parts.into_iter().enumerate() {
        if i % 2 == 1 {
            out.push(Span::Code(part));
        } else if bold_pairs {
            for (j, piece) in part.split("**").enumerate() {
                if j > 0 {
                    out.push(Span::Bold);
                }
                out.push(Span::Text(piece));
            }
        } else {
            out.push(Span::Text(part));
        }
    }
    out
}

/// `text` as Markdown: on one line, with every character Markdown (or, in
/// a table `cell`, the column separator) would read as syntax escaped.
/// Digits, `,`, `.`, `%`, `+` and `-` inside a line are left alone, so
/// figures read as they are.
fn markdown(text: &str, cell: bool) -> String {
    let text = text.replace(['\r', '\n'], " ");
    let mut out = String::with_capacity(text.len());
    for span in spans(&text) {
        match span {
            Span::Bold => out.push_str("**"),
            // No escapes inside a code span, but GFM splits a table row at
            // every unescaped `|`, even there.
            Span::Code(code) if cell => out.push_str(&format!("`{}`", code.replace('|', "\\|"))),
            Span::Code(code) => out.push_str(&format!("`{code}`")),
            Span::Text(plain) => {
                let chars: Vec<char> = plain.chars().collect();
                for (i, &c) in chars.iter().enumerate() {
                    let next = chars.get(i + 1).copied().unwrap_or(' ');
                    let after_word = i > 0 && chars[i - 1].is_alphanumeric();
                    // Only what would start markup is escaped, so that
                    // kvperf's own "<0.1%" or "[file.go:133]" stay readable.
                    let syntax = match c {
                        '\\' | '`' | '*' | '|' | '~' => true,
                        // Inside a word (NOT_FOUND) `_` never starts emphasis.
                        '_' => !(after_word && next.is_alphanumeric()),
                        '<' => next.is_ascii_alphabetic() || matches!(next, '/' | '!' | '?'),
                        '&' => next.is_alphanumeric() || next == '#',
                        ']' => matches!(next, '(' | '[' | ':'),
                        _ => false,
                    };
                    if syntax {
                        out.push('\\');
                    }
                    out.push(c);
                }
            }
        }
    }
    // A line starting `#`, `-`, `+`, `=`, `>`, `[` or `1.` would be a
    // heading, a list, a quote or a link definition.
    let digits = out.bytes().take_while(u8::is_ascii_digit).count();
    let list_number = digits > 0
        && matches!(out.as_bytes().get(digits), Some(b'.' | b')'))
        && matches!(out.as_bytes().get(digits + 1), None | Some(b' '));
    if !cell && (out.starts_with(['#', '-', '+', '=', '>', '[']) || list_number) {
        let at = if list_number { digits } else { 0 };
        out.insert(at, '\\');
    }
    out
}

pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Escapes `text` and turns `**x**` into `<b>x</b>` and `` `x` `` into `<code>x</code>`.
fn inline(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut bold = false;
    for span in spans(text) {
        match span {
            Span::Bold => {
                out.push_str(if bold { "</b>" } else { "<b>" });
                bold = !bold;
            }
            Span::Code(code) => out.push_str(&format!("<code>{}</code>", escape(code))),
            Span::Text(plain) => out.push_str(&escape(plain)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_tables_in_both_formats() {
        let doc = Document {
            title: "T <1>".into(),
            blocks: vec![
                Block::Paragraph("peak **42,012** in `plan.toml`".into()),
                Block::Table(Table {
                    header: vec!["#Threads".into(), "a".into()],
                    rows: vec![vec!["4".into(), "**17,060**".into()]],
                }),
            ],
        };
        let md = doc.to_markdown();
        assert!(
            md.contains("| #Threads | a |\n| --- | ---: |\n| 4 | **17,060** |"),
            "{md}"
        );
        let html = doc.to_html();
        assert!(html.contains("<td><b>17,060</b></td>"));
        // A table wider than the page scrolls in its own box.
        assert!(html.contains("<div class=\"wide\"><table>"), "{html}");
        assert!(html.contains(".wide{overflow-x:auto;"), "{html}");
        assert!(html.contains("<p>peak <b>42,012</b> in <code>plan.toml</code></p>"));
        assert!(html.contains("<title>T &lt;1&gt;</title>"));
        assert!(!html.contains("http"), "no network references");
    }

    #[test]
    fn labels_are_shown_as_written_and_only_paired_markers_are_markup() {
        let label = "a|b <x> & \"y\" *z* _w_ [l](u)\n# 2";
        let doc = Document {
            title: label.into(),
            blocks: vec![
                Block::Paragraph(format!("- {label} peak **42,012**")),
                Block::Table(Table {
                    header: vec!["#Threads".into(), label.into()],
                    rows: vec![vec!["4".into(), format!("`x|y` **1,2.5%** {label}")]],
                }),
            ],
        };
        let md = doc.to_markdown();
        let shown = r#"a\|b \<x> & "y" \*z\* \_w\_ [l\](u) # 2"#;
        assert!(
            md.starts_with(&format!("# {shown}\n\n\\- {shown} peak **42,012**\n")),
            "{md}"
        );
        assert!(md.contains(&format!("| #Threads | {shown} |\n")), "{md}");
        assert!(
            md.contains(&format!("| 4 | `x\\|y` **1,2.5%** {shown} |\n")),
            "{md}"
        );
        for row in md.lines().filter(|l| l.starts_with('|')) {
            let separators = row
                .replace(r"\\", "")
                .replace(r"\|", "")
                .matches('|')
                .count();
            assert_eq!(separators, 3, "two columns: {row}");
        }
        let html = doc.to_html();
        assert!(!html.contains("<x>") && !html.contains("\"y\""), "{html}");
        assert!(
            html.contains(
                "<p>- a|b &lt;x&gt; &amp; &quot;y&quot; *z* _w_ [l](u)\n# 2 peak <b>42,012</b></p>"
            ),
            "{html}"
        );
        assert!(
            html.contains("<td><code>x|y</code> <b>1,2.5%</b> a|b"),
            "{html}"
        );
        assert_eq!(
            markdown("1. x", false),
            r"1\. x",
            "a leading number and a dot would be a list"
        );
        assert_eq!(markdown("1.5k ops", false), "1.5k ops");
        assert_eq!(markdown("NOT_FOUND _x", true), r"NOT_FOUND \_x");
        assert_eq!(
            markdown("failed, <0.1% [a.go:1]", true),
            "failed, <0.1% [a.go:1]"
        );
        assert_eq!(markdown("&amp; </b>", true), r"\&amp; \</b>");
        assert_eq!(markdown("> q", false), r"\> q");
        assert_eq!(markdown("[x]: u", false), r"\[x\]: u");
        assert_eq!(markdown("it`s **x", true), r"it\`s \*\*x", "unpaired");
        assert_eq!(inline("it`s **x"), "it`s **x");
    }
}
