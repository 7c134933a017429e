//! Chat templates: which one a GGUF's `tokenizer.chat_template` is, recognised as llama.cpp's
//! `llm_chat_detect_template` recognises it (the same checks in the same order, so a template
//! llama.cpp takes for another family is not taken for one of these), and the prompt it makes
//! of a system and a user message with the assistant's turn opened, as its
//! `llama_chat_apply_template` writes it (the facts, from llama.cpp's chat code).

use crate::error::{Error, Result};

/// The templates applied here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatTemplate {
    ChatMl,
    Gemma,
    Llama3,
    MistralV1,
    MistralV3,
    MistralV3Tekken,
    MistralV7,
}

/// What a template string is, by llama.cpp's checks: one of ours, or another family (named).
enum Detected {
    Ours(ChatTemplate),
    Other(&'static str),
}

impl ChatTemplate {
    /// The template a GGUF's template string is; another family is refused by its llama.cpp name.
    pub fn detect(template: &str) -> Result<ChatTemplate> {
        match detect(template) {
            Some(Detected::Ours(t)) => Ok(t),
            Some(Detected::Other(name)) => Err(Error::Model(format!(
                "chat template `{name}` is not supported: --chat applies chatml, gemma, llama3 and mistral's"
            ))),
            None => Err(Error::Model(format!(
                "chat template `{}` is not one llama.cpp recognises",
                crate::error::clip(template)
            ))),
        }
    }

    /// The token texts the template's turns are made of: each must be a token of the vocabulary
    /// (else the prompt would be the markers spelled out as plain text).
    pub fn markers(self) -> &'static [&'static str] {
        match self {
            ChatTemplate::ChatMl => &["<|im_start|>", "<|im_end|>"],
            ChatTemplate::Gemma => &["<start_of_turn>", "<end_of_turn>"],
            ChatTemplate::Llama3 => &["<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"],
            ChatTemplate::MistralV1 | ChatTemplate::MistralV3 | ChatTemplate::MistralV3Tekken => &["[INST]", "[/INST]"],
            ChatTemplate::MistralV7 => &["[INST]", "[/INST]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]"],
        }
    }

    /// The token that ends the model's turn, where it is not the vocabulary's end of text.
    pub fn end_of_turn(self) -> Option<&'static str> {
        match self {
            ChatTemplate::ChatMl => Some("<|im_end|>"),
            ChatTemplate::Gemma => Some("<end_of_turn>"),
            ChatTemplate::Llama3 => Some("<|eot_id|>"),
            ChatTemplate::MistralV1
            | ChatTemplate::MistralV3
            | ChatTemplate::MistralV3Tekken
            | ChatTemplate::MistralV7 => None,
        }
    }

    /// The prompt of an optional system message and a user message, the assistant's turn open.
    pub fn apply(self, system: Option<&str>, user: &str) -> String {
        let mut s = String::new();
        match self {
            ChatTemplate::ChatMl => {
                if let Some(sys) = system {
                    s += &format!("<|im_start|>system\n{sys}<|im_end|>\n");
                }
                s += &format!("<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n");
            }
            ChatTemplate::Gemma => {
                // No system turn: the system message opens the user's.
                s += "<start_of_turn>user\n";
                if let Some(sys) = system.map(trim).filter(|t| !t.is_empty()) {
                    s += &format!("{sys}\n\n");
                }
                s += &format!("{}<end_of_turn>\n<start_of_turn>model\n", trim(user));
            }
            ChatTemplate::Llama3 => {
                let turn = |role: &str, text: &str| {
                    format!("<|start_header_id|>{role}<|end_header_id|>\n\n{}<|eot_id|>", trim(text))
                };
                if let Some(sys) = system {
                    s += &turn("system", sys);
                }
                s += &turn("user", user);
                s += "<|start_header_id|>assistant<|end_header_id|>\n\n";
            }
            ChatTemplate::MistralV1 | ChatTemplate::MistralV3 | ChatTemplate::MistralV3Tekken => {
                let leading = if self == ChatTemplate::MistralV1 { " " } else { "" };
                let trailing = if self == ChatTemplate::MistralV3Tekken { "" } else { " " };
                s += &format!("{leading}[INST]{trailing}");
                if let Some(sys) = system {
                    s += &format!("{sys}\n\n");
                }
                s += &format!("{user}{leading}[/INST]");
            }
            ChatTemplate::MistralV7 => {
                if let Some(sys) = system {
                    s += &format!("[SYSTEM_PROMPT] {sys}[/SYSTEM_PROMPT]");
                }
                s += &format!("[INST] {user}[/INST]");
            }
        }
        s
    }
}

/// llama.cpp's `trim`: ASCII whitespace (C's isspace) off both ends.
fn trim(s: &str) -> &str {
    s.trim_matches(|c: char| matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r'))
}

/// llama.cpp's checks, in its order, up to the last family applied here.
fn detect(t: &str) -> Option<Detected> {
    use ChatTemplate::*;
    use Detected::{Other, Ours};
    let has = |s: &str| t.contains(s);
    // A template given by name.
    let named = match t {
        "chatml" => Some(Ours(ChatMl)),
        "gemma" => Some(Ours(Gemma)),
        "llama3" => Some(Ours(Llama3)),
        "mistral-v1" => Some(Ours(MistralV1)),
        "mistral-v3" => Some(Ours(MistralV3)),
        "mistral-v3-tekken" => Some(Ours(MistralV3Tekken)),
        "mistral-v7" => Some(Ours(MistralV7)),
        _ => None,
    };
    if named.is_some() {
        return named;
    }
    Some(if has("<|im_start|>") {
        match (has("<|im_sep|>"), has("<end_of_utterance>")) {
            (true, _) => Other("phi4"),
            (false, true) => Other("smolvlm"),
            (false, false) => Ours(ChatMl),
        }
    } else if t.starts_with("mistral") || has("[INST]") {
        if has("[SYSTEM_PROMPT]") {
            Ours(MistralV7)
        } else if has("' [INST] ' + system_message") || has("[AVAILABLE_TOOLS]") {
            if has(" [INST]") {
                Ours(MistralV1)
            } else if has("\"[INST]\"") {
                Ours(MistralV3Tekken)
            } else {
                Ours(MistralV3)
            }
        } else {
            Other("llama2")
        }
    } else if has("<|assistant|>") && has("<|end|>") {
        Other("phi3")
    } else if has("[gMASK]<sop>") {
        Other("chatglm4")
    } else if has("<|assistant|>") && has("<|user|>") {
        Other("falcon3, glmedge or exaone-moe")
    } else if has("<|{{ item['role'] }}|>") && has("<|begin_of_image|>") {
        Other("glmedge")
    } else if has("<|user|>") && has("<|endoftext|>") {
        Other("zephyr")
    } else if has("bos_token + message['role']") {
        Other("monarch")
    } else if has("<start_of_turn>") {
        Ours(Gemma)
    } else if has("'\\n\\nAssistant: ' + eos_token") {
        Other("orion")
    } else if has("GPT4 Correct ") {
        Other("openchat")
    } else if has("USER: ") && has("ASSISTANT: ") {
        Other("vicuna")
    } else if has("### Instruction:") && has("<|EOT|>") {
        Other("deepseek")
    } else if has("<|START_OF_TURN_TOKEN|>") && has("<|USER_TOKEN|>") {
        Other("command-r")
    } else if has("<|start_header_id|>") && has("<|end_header_id|>") {
        Ours(Llama3)
    } else {
        return None;
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_are_recognised_in_llama_cpps_order() {
        let d = |t: &str| ChatTemplate::detect(t);
        assert_eq!(d("{{'<|im_start|>' + role}}").unwrap(), ChatTemplate::ChatMl);
        // ChatML's marker wins over gemma's, as in llama.cpp.
        assert_eq!(d("<|im_start|> <start_of_turn>").unwrap(), ChatTemplate::ChatMl);
        assert_eq!(d("{{ '<start_of_turn>' + role }}").unwrap(), ChatTemplate::Gemma);
        assert_eq!(d("<|start_header_id|>{{role}}<|end_header_id|>").unwrap(), ChatTemplate::Llama3);
        assert_eq!(d("[SYSTEM_PROMPT] [INST]").unwrap(), ChatTemplate::MistralV7);
        let e = d("<|assistant|> <|end|> <start_of_turn>").unwrap_err().to_string();
        assert!(e.contains("`phi3` is not supported"), "{e}");
        let e = d("{{ message }}").unwrap_err().to_string();
        assert!(e.contains("not one llama.cpp recognises"), "{e}");
    }

    #[test]
    fn gemma_folds_the_system_message_into_the_users_turn() {
        let p = ChatTemplate::Gemma.apply(Some(" Be brief. "), " Hi ");
        assert_eq!(p, "<start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\n");
    }
}
