//! A report as a list of blocks, rendered to Markdown (tables and text) or
//! to one self-contained HTML page (the same, plus inline SVG charts).

/// Text may hold `**bold**` spans (the briefs bold each config's peak).
#[derive(Debug, Clone)]
pub enum Block {
    Heading(u8, String),
    Paragraph(String),
    Table(Table),
    /// Inline SVG documents, shown side by side in HTML only.
    Charts(Vec<String>),
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
        let mut out = format!("# {}\n\n", self.title);
        for block in &self.blocks {
            match block {
                Block::Heading(level, text) => {
                    out.push_str(&format!("{} {text}\n\n", "#".repeat(*level as usize + 1)))
                }
                Block::Paragraph(text) => out.push_str(&format!("{text}\n\n")),
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
                Block::Charts(_) => {}
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
                    body.push_str("<table>\n<tr>");
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
                    body.push_str("</table>\n");
                }
                Block::Charts(svgs) => {
                    body.push_str("<div class=\"charts\">\n");
                    for svg in svgs {
                        body.push_str(svg);
                        body.push('\n');
                    }
                    body.push_str("</div>\n");
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

/// No fonts, scripts or images from anywhere: the page must open offline.
const STYLE: &str = "body{font-family:sans-serif;margin:2em;color:#222;max-width:1300px}\
table{border-collapse:collapse;margin:0.5em 0 1.5em}\
th,td{border:1px solid #bbb;padding:3px 9px;text-align:right}\
th:first-child,td:first-child{text-align:left}th{background:#eee}\
.charts{display:flex;flex-wrap:wrap;gap:12px}\
.charts svg{border:1px solid #ddd;background:#fff}";

fn markdown_row(cells: &[String]) -> String {
    format!("| {} |\n", cells.join(" | "))
}

pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Escapes `text` and turns `**x**` into `<b>x</b>` and `` `x` `` into `<code>x</code>`.
fn inline(text: &str) -> String {
    let wrap = |text: &str, marker: &str, tag: &str| {
        let mut out = String::new();
        for (i, part) in text.split(marker).enumerate() {
            if i % 2 == 1 {
                out.push_str(&format!("<{tag}>{part}</{tag}>"));
            } else {
                out.push_str(part);
            }
        }
        out
    };
    wrap(&wrap(&escape(text), "**", "b"), "`", "code")
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
        assert!(html.contains("<p>peak <b>42,012</b> in <code>plan.toml</code></p>"));
        assert!(html.contains("<title>T &lt;1&gt;</title>"));
        assert!(!html.contains("http"), "no network references");
    }
}
