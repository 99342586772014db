// Chat templates: a conversation (role, content messages) turned into the prompt text a chat
// model was trained on. Like llama.cpp's llama_chat_apply_template (c392e50), this recognises
// the common template families by name or by markers in the model's tokenizer.chat_template
// text; it is not a Jinja interpreter. See docs/chat.md.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qinfer/qinfer.hpp"

namespace qinfer::chat {

using Message = ChatMessage;

// The built-in template names, in table order.
std::vector<std::string_view> template_names();

// The family of a template: `name_or_text` is a built-in name or a Jinja template text, whose
// family is recognised by its markers. nullopt when neither.
std::optional<std::string_view> detect(std::string_view name_or_text);

// The formatted prompt; `add_generation_prompt` opens the assistant's turn (for the templates
// that have one). Throws Error(kInvalidArgument) naming the built-in templates when the
// template is not recognised.
std::string apply(std::string_view name_or_text, std::span<const Message> messages,
                  bool add_generation_prompt);

}  // namespace qinfer::chat
