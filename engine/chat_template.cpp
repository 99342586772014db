#include "chat_template.hpp"

#include <cctype>
#include <functional>

#include "qinfer/error.hpp"

namespace qinfer::chat {
namespace {

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

// A template that formats each message on its own: a pattern per role, in which {role} is the
// message's role, {Role} the same with its first letter upper-cased and {content} the content.
// A null pattern drops messages of that role.
struct TurnFormat {
  const char* begin;  // once, before the first message
  const char* system;
  const char* user;
  const char* assistant;
  const char* other;       // any other role ("tool", ...)
  const char* generation;  // opens the assistant's turn
  bool trim;               // content trimmed of surrounding white space
};

void expand(std::string& out, std::string_view pattern, const Message& m, bool trim_content) {
  for (size_t i = 0; i < pattern.size();) {
    auto take = [&](std::string_view field) {
      if (pattern.substr(i, field.size()) != field) return false;
      i += field.size();
      return true;
    };
    if (take("{content}")) {
      out += trim_content ? trim(m.content) : m.content;
    } else if (take("{role}")) {
      out += m.role;
    } else if (take("{Role}")) {
      std::string role = m.role;
      if (!role.empty())
        role[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(role[0])));
      out += role;
    } else {
      out += pattern[i++];
    }
  }
}

std::string format_turns(const TurnFormat& f, std::span<const Message> messages, bool add_gen) {
  std::string out = f.begin;
  for (const Message& m : messages) {
    const char* pattern = m.role == "system"      ? f.system
                          : m.role == "user"      ? f.user
                          : m.role == "assistant" ? f.assistant
                                                  : f.other;
    if (pattern != nullptr) expand(out, pattern, m, f.trim);
  }
  if (add_gen) out += f.generation;
  return out;
}

using Formatter = std::function<std::string(std::span<const Message>, bool)>;

Formatter turns(TurnFormat f) {
  return [f](std::span<const Message> m, bool add_gen) { return format_turns(f, m, add_gen); };
}

// Same pattern for every role.
Formatter each(const char* begin, const char* pattern, const char* generation, bool trim = false) {
  return turns({begin, pattern, pattern, pattern, pattern, generation, trim});
}

// llama 2 and its variants: "[INST] user [/INST]assistant</s>", a system message inside the
// first instruction (in <<SYS>> markers when the variant has them); the generation prompt is
// implicit. Any role but system and user is an answer.
Formatter llama2(bool sys_markers, bool bos_in_history, bool strip) {
  return [=](std::span<const Message> messages, bool) {
    std::string out = "[INST] ";
    bool in_turn = true;
    for (const Message& m : messages) {
      std::string content = strip ? trim(m.content) : m.content;
      if (!in_turn) {
        out += bos_in_history ? "<s>[INST] " : "[INST] ";
        in_turn = true;
      }
      if (m.role == "system") {
        out += sys_markers ? "<<SYS>>\n" + content + "\n<</SYS>>\n\n" : content + "\n";
      } else if (m.role == "user") {
        out += content + " [/INST]";
      } else {
        out += content + "</s>";
        in_turn = false;
      }
    }
    return out;
  };
}

// Mistral v1, v3 and v3-tekken: the system message leads the next instruction; they differ in
// the spaces around [INST] and whether an answer is trimmed.
Formatter mistral(const char* lead, const char* space, bool trim_answer) {
  return [=](std::span<const Message> messages, bool) {
    std::string out;
    bool in_turn = false;
    for (const Message& m : messages) {
      if (!in_turn) {
        out += std::string(lead) + "[INST]" + space;
        in_turn = true;
      }
      if (m.role == "system") {
        out += m.content + "\n\n";
      } else if (m.role == "user") {
        out += m.content + lead + "[/INST]";
      } else {
        out += space + (trim_answer ? trim(m.content) : m.content) + "</s>";
        in_turn = false;
      }
    }
    return out;
  };
}

// Gemma (no system role: the last system message, trimmed, leads the next user turn; the
// assistant is "model") and Orion (the same merge, untrimmed, and no generation prompt).
std::string gemma(std::span<const Message> messages, bool add_gen) {
  std::string out, system;
  for (const Message& m : messages) {
    if (m.role == "system") {
      system = trim(m.content);
      continue;
    }
    const std::string role = m.role == "assistant" ? "model" : m.role;
    out += "<start_of_turn>" + role + "\n";
    if (!system.empty() && role != "model") {
      out += system + "\n\n";
      system.clear();
    }
    out += trim(m.content) + "<end_of_turn>\n";
  }
  if (add_gen) out += "<start_of_turn>model\n";
  return out;
}

std::string orion(std::span<const Message> messages, bool) {
  std::string out, system;
  for (const Message& m : messages) {
    if (m.role == "system") {
      system = m.content;
    } else if (m.role == "user") {
      out += "Human: ";
      if (!system.empty()) {
        out += system + "\n\n";
        system.clear();
      }
      out += m.content + "\n\nAssistant: </s>";
    } else {
      out += m.content + "</s>";
    }
  }
  return out;
}

// Monarch: every turn but the first opens with <s>.
std::string monarch(std::span<const Message> messages, bool add_gen) {
  std::string out;
  for (size_t i = 0; i < messages.size(); ++i) {
    if (i > 0) out += "<s>";
    out += messages[i].role + "\n" + messages[i].content + "</s>\n";
  }
  if (add_gen) out += "<s>assistant\n";
  return out;
}

// Granite: a tool call is marked inside the assistant_tool_call turn.
std::string granite(std::span<const Message> messages, bool add_gen) {
  std::string out;
  for (const Message& m : messages) {
    out += "<|start_of_role|>" + m.role + "<|end_of_role|>";
    if (m.role == "assistant_tool_call") out += "<|tool_call|>";
    out += m.content + "<|end_of_text|>\n";
  }
  if (add_gen) out += "<|start_of_role|>assistant<|end_of_role|>\n";
  return out;
}

// GigaChat: only a leading system message is kept, right after <s>.
std::string gigachat(std::span<const Message> messages, bool add_gen) {
  std::string out = "<s>";
  size_t i = 0;
  if (!messages.empty() && messages[0].role == "system") {
    out += messages[0].content + "<|message_sep|>";
    i = 1;
  }
  for (; i < messages.size(); ++i) {
    const Message& m = messages[i];
    if (m.role == "user") {
      out += "user<|role_sep|>" + m.content +
             "<|message_sep|>available functions<|role_sep|>[]<|message_sep|>";
    } else if (m.role == "assistant") {
      out += "assistant<|role_sep|>" + m.content + "<|message_sep|>";
    }
  }
  if (add_gen) out += "assistant<|role_sep|>";
  return out;
}

struct Template {
  std::string_view name;
  Formatter format;
};

// clang-format off
const std::vector<Template>& table() {
  static const std::vector<Template> templates = {
    {"chatml",            each("", "<|im_start|>{role}\n{content}<|im_end|>\n", "<|im_start|>assistant\n")},
    {"llama2",            llama2(false, false, false)},
    {"llama2-sys",        llama2(true, false, false)},
    {"llama2-sys-bos",    llama2(true, true, false)},
    {"llama2-sys-strip",  llama2(true, false, true)},
    {"mistral-v1",        mistral(" ", " ", false)},
    {"mistral-v3",        mistral("", " ", true)},
    {"mistral-v3-tekken", mistral("", "", false)},
    {"mistral-v7",        turns({"", "[SYSTEM_PROMPT] {content}[/SYSTEM_PROMPT]", "[INST] {content}[/INST]",
                                 " {content}</s>", " {content}</s>", "", false})},
    {"phi3",              each("", "<|{role}|>\n{content}<|end|>\n", "<|assistant|>\n")},
    {"phi4",              each("", "<|im_start|>{role}<|im_sep|>{content}<|im_end|>", "<|im_start|>assistant<|im_sep|>")},
    {"falcon3",           each("", "<|{role}|>\n{content}\n", "<|assistant|>\n")},
    {"zephyr",            each("", "<|{role}|>\n{content}<|endoftext|>\n", "<|assistant|>\n")},
    {"monarch",           monarch},
    {"gemma",             gemma},
    {"orion",             orion},
    {"openchat",          turns({"", "{content}<|end_of_turn|>", "GPT4 Correct {Role}: {content}<|end_of_turn|>",
                                 "GPT4 Correct {Role}: {content}<|end_of_turn|>",
                                 "GPT4 Correct {Role}: {content}<|end_of_turn|>", "GPT4 Correct Assistant:", false})},
    {"vicuna",            turns({"", "{content}\n\n", "USER: {content}\n", "ASSISTANT: {content}</s>\n", nullptr,
                                 "ASSISTANT:", false})},
    {"vicuna-orca",       turns({"", "SYSTEM: {content}\n", "USER: {content}\n", "ASSISTANT: {content}</s>\n", nullptr,
                                 "ASSISTANT:", false})},
    {"deepseek",          turns({"", "{content}", "### Instruction:\n{content}\n", "### Response:\n{content}\n<|EOT|>\n",
                                 nullptr, "### Response:\n", false})},
    {"deepseek2",         turns({"", "{content}\n\n", "User: {content}\n\n", "Assistant: {content}<｜end▁of▁sentence｜>",
                                 nullptr, "Assistant:", false})},
    {"deepseek3",         turns({"", "{content}\n\n", "<｜User｜>{content}", "<｜Assistant｜>{content}<｜end▁of▁sentence｜>",
                                 nullptr, "<｜Assistant｜>", false})},
    {"command-r",         turns({"", "<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>{content}<|END_OF_TURN_TOKEN|>",
                                 "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>{content}<|END_OF_TURN_TOKEN|>",
                                 "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>{content}<|END_OF_TURN_TOKEN|>", nullptr,
                                 "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>", true})},
    {"llama3",            each("", "<|start_header_id|>{role}<|end_header_id|>\n\n{content}<|eot_id|>",
                               "<|start_header_id|>assistant<|end_header_id|>\n\n", true)},
    {"chatglm3",          each("[gMASK]sop", "<|{role}|>\n {content}", "<|assistant|>")},
    {"chatglm4",          each("[gMASK]<sop>", "<|{role}|>\n{content}", "<|assistant|>")},
    {"glmedge",           each("", "<|{role}|>\n{content}", "<|assistant|>")},
    {"minicpm",           turns({"", "{content}", "<用户>{content}<AI>", "{content}", "{content}", "", true})},
    {"exaone3",           turns({"", "[|system|]{content}[|endofturn|]\n", "[|user|]{content}\n",
                                 "[|assistant|]{content}[|endofturn|]\n", nullptr, "[|assistant|]", true})},
    {"rwkv-world",        turns({"", "{content}\n\n", "User: {content}\n\nAssistant:", "{content}\n\n", "{content}\n\n",
                                 "", false})},
    {"granite",           granite},
    {"gigachat",          gigachat},
    {"megrez",            each("", "<|role_start|>{role}<|role_end|>{content}<|turn_end|>",
                               "<|role_start|>assistant<|role_end|>")},
  };
  return templates;
}
// clang-format on

// The family of a Jinja template text, by the markers llama.cpp looks for (first match wins).
std::optional<std::string_view> detect_text(std::string_view t) {
  auto has = [t](std::string_view s) { return t.find(s) != std::string_view::npos; };
  if (has("<|im_start|>")) return has("<|im_sep|>") ? "phi4" : "chatml";
  if (t.starts_with("mistral") || has("[INST]")) {
    if (has("[SYSTEM_PROMPT]")) return "mistral-v7";
    if (has("' [INST] ' + system_message") || has("[AVAILABLE_TOOLS]")) {
      if (has(" [INST]")) return "mistral-v1";
      if (has("\"[INST]\"")) return "mistral-v3-tekken";
      return "mistral-v3";
    }
    if (has("content.strip()")) return "llama2-sys-strip";
    if (has("bos_token + '[INST]")) return "llama2-sys-bos";
    if (has("<<SYS>>")) return "llama2-sys";
    return "llama2";
  }
  if (has("<|assistant|>") && has("<|end|>")) return "phi3";
  if (has("[gMASK]<sop>")) return "chatglm4";
  if (has("<|assistant|>") && has("<|user|>")) return has("</s>") ? "falcon3" : "glmedge";
  if (has("<|{{ item['role'] }}|>") && has("<|begin_of_image|>")) return "glmedge";
  if (has("<|user|>") && has("<|endoftext|>")) return "zephyr";
  if (has("bos_token + message['role']")) return "monarch";
  if (has("<start_of_turn>")) return "gemma";
  if (has("'\\n\\nAssistant: ' + eos_token")) return "orion";
  if (has("GPT4 Correct ")) return "openchat";
  if (has("USER: ") && has("ASSISTANT: ")) return has("SYSTEM: ") ? "vicuna-orca" : "vicuna";
  if (has("### Instruction:") && has("<|EOT|>")) return "deepseek";
  if (has("<|START_OF_TURN_TOKEN|>") && has("<|USER_TOKEN|>")) return "command-r";
  if (has("<|start_header_id|>") && has("<|end_header_id|>")) return "llama3";
  if (has("[gMASK]sop")) return "chatglm3";
  if (has("<用户>")) return "minicpm";
  if (has("'Assistant: ' + message['content'] + eos_token")) return "deepseek2";
  if (has("<｜Assistant｜>") && has("<｜User｜>") && has("<｜end▁of▁sentence｜>"))
    return "deepseek3";
  if (has("[|system|]") && has("[|assistant|]") && has("[|endofturn|]")) return "exaone3";
  if (has("rwkv-world")) return "rwkv-world";
  if (has("<|start_of_role|>")) return "granite";
  if (has("message['role'] + additional_special_tokens[0] + message['content'] + "
          "additional_special_tokens[1]"))
    return "gigachat";
  if (has("<|role_start|>")) return "megrez";
  return std::nullopt;
}

const Template* find(std::string_view name) {
  for (const Template& t : table())
    if (t.name == name) return &t;
  return nullptr;
}

}  // namespace

std::vector<std::string_view> template_names() {
  std::vector<std::string_view> names;
  for (const Template& t : table()) names.push_back(t.name);
  return names;
}

std::optional<std::string_view> detect(std::string_view name_or_text) {
  if (const Template* t = find(name_or_text)) return t->name;
  return detect_text(name_or_text);
}

std::string apply(std::string_view name_or_text, std::span<const Message> messages,
                  bool add_generation_prompt) {
  const std::optional<std::string_view> name = detect(name_or_text);
  if (!name) {
    std::string known;
    for (std::string_view n : template_names())
      known += (known.empty() ? "" : ", ") + std::string(n);
    const bool looks_like_name =
        name_or_text.size() < 40 && name_or_text.find('{') == std::string_view::npos;
    throw Error(
        ErrorCode::kInvalidArgument,
        (looks_like_name ? "unknown chat template '" + std::string(name_or_text) + "'"
                         : std::string("the model's chat template is not one qinfer recognises")) +
            " (built-in templates: " + known + ")");
  }
  return find(*name)->format(messages, add_generation_prompt);
}

}  // namespace qinfer::chat
