#!/usr/bin/python3
"""Writes chat_golden.json: llama.cpp's own llama_chat_apply_template output for every
built-in template name of the llama.cpp build in ../shared/tools/llama.cpp (c392e50),
for a fixed set of conversations, with and without the generation prompt; plus, for
template texts shaped like real models' Jinja templates, the output llama.cpp gives when
it detects the family from the text.

Run:  /usr/bin/python3 tests/data/chat/make_golden.py [LIBLLAMA.so]
"""
import ctypes
import json
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
lib_path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    here, "../../../../shared/tools/llama.cpp/bin/libllama.so")
lib = ctypes.CDLL(os.path.abspath(lib_path))


class Message(ctypes.Structure):
    _fields_ = [("role", ctypes.c_char_p), ("content", ctypes.c_char_p)]


lib.llama_chat_apply_template.restype = ctypes.c_int32
lib.llama_chat_apply_template.argtypes = [ctypes.c_char_p, ctypes.POINTER(Message),
                                          ctypes.c_size_t, ctypes.c_bool,
                                          ctypes.c_char_p, ctypes.c_int32]
lib.llama_chat_builtin_templates.restype = ctypes.c_int32
lib.llama_chat_builtin_templates.argtypes = [ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t]


def apply(template, messages, add_ass):
    arr = (Message * len(messages))(*[Message(m["role"].encode(), m["content"].encode())
                                      for m in messages])
    size = 1 << 16
    buf = ctypes.create_string_buffer(size)
    n = lib.llama_chat_apply_template(template.encode(), arr, len(messages), add_ass, buf, size)
    if n < 0:
        return None
    assert n < size
    return buf.raw[:n].decode("utf-8")


def builtin_names():
    n = lib.llama_chat_builtin_templates(None, 0)
    arr = (ctypes.c_char_p * n)()
    lib.llama_chat_builtin_templates(arr, n)
    return [arr[i].decode() for i in range(n)]


conversations = {
    "system_user": [
        {"role": "system", "content": "You are a helpful assistant"},
        {"role": "user", "content": "Hello"},
    ],
    "multi_turn": [
        {"role": "system", "content": "You are a helpful assistant"},
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Hi there"},
        {"role": "user", "content": "Who are you"},
        {"role": "assistant", "content": "   I am an assistant   "},
        {"role": "user", "content": "Another question"},
    ],
    "no_system": [
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": "4"},
        {"role": "user", "content": "  And 3+3?\nThink step by step.  "},
    ],
    "user_only": [
        {"role": "user", "content": "héllo wörld ✓"},
    ],
    "system_late": [
        {"role": "user", "content": "Hi"},
        {"role": "system", "content": " Be brief. "},
        {"role": "assistant", "content": "Ok"},
        {"role": "user", "content": "Go"},
    ],
    "two_systems": [
        {"role": "system", "content": "First rule."},
        {"role": "system", "content": "Second rule."},
        {"role": "user", "content": "Hello"},
    ],
    "assistant_first": [
        {"role": "assistant", "content": "How can I help?"},
        {"role": "user", "content": "Tell me a joke"},
    ],
    "other_role": [
        {"role": "user", "content": "What's the weather?"},
        {"role": "assistant_tool_call", "content": "[weather()]"},
        {"role": "tool", "content": "{\"temp\": 21}"},
        {"role": "user", "content": "Thanks"},
    ],
    "empty": [],
}

# Template texts carrying the markers by which llama.cpp recognises a family in a model's
# tokenizer.chat_template (each an excerpt in the shape of the real model's template).
detect_texts = {
    "chatml-like": "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}",
    "phi4-like": "{% for message in messages %}{{'<|im_start|>' + message['role'] + '<|im_sep|>' + message['content'] + '<|im_end|>'}}{% endfor %}",
    "llama2-like": "{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + message['content'] + ' [/INST]' }}{% endif %}",
    "llama2-sys-like": "{{ '[INST] <<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' }}",
    "llama2-sys-bos-like": "{{ bos_token + '[INST] ' + '<<SYS>>' }}",
    "llama2-sys-strip-like": "{{ '[INST] <<SYS>>' + message['content'].strip() }}",
    "mistral-v1-like": "{{ ' [INST] ' + system_message + '[AVAILABLE_TOOLS]' }}",
    "mistral-v3-like": "{{ '[INST]' + '[AVAILABLE_TOOLS]' }}",
    "mistral-v3-tekken-like": "{{ \"[INST]\" + '[AVAILABLE_TOOLS]' }}",
    "mistral-v7-like": "{{ '[SYSTEM_PROMPT]' + '[INST]' }}",
    "phi3-like": "{{'<|user|>' + '\\n' + message['content'] + '<|end|>' + '\\n' + '<|assistant|>' + '\\n'}}",
    "falcon3-like": "{{'<|user|>\\n' + content + '</s>' + '<|assistant|>\\n'}}",
    "glmedge-like": "{{'<|user|>\\n' + content + '<|assistant|>\\n'}}",
    "chatglm4-like": "[gMASK]<sop>{% for item in messages %}<|{{ item['role'] }}|>{% endfor %}",
    "chatglm3-like": "{% for message in messages %}[gMASK]sop<|{{ message['role'] }}|>{% endfor %}",
    "zephyr-like": "{{ '<|user|>\\n' + message['content'] + '<|endoftext|>' }}",
    "monarch-like": "{{ bos_token + message['role'] + '\\n' + message['content'] + eos_token }}",
    "gemma-like": "{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}",
    "orion-like": "{{ 'Human: ' + message['content'] + '\\n\\nAssistant: ' + eos_token }}",
    "openchat-like": "{{ 'GPT4 Correct ' + role + ': ' + message['content'] + '<|end_of_turn|>' }}",
    "vicuna-like": "{{ 'USER: ' + message['content'] + ' ASSISTANT: ' }}",
    "vicuna-orca-like": "{{ 'SYSTEM: ' + sys + 'USER: ' + message['content'] + ' ASSISTANT: ' }}",
    "deepseek-like": "{{ '### Instruction:\\n' + message['content'] + '\\n' + '<|EOT|>' }}",
    "command-r-like": "{{ '<|START_OF_TURN_TOKEN|><|USER_TOKEN|>' + message['content'] }}",
    "llama3-like": "{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' }}",
    "minicpm-like": "{{ '<用户>' + message['content'] + '<AI>' }}",
    "deepseek2-like": "{{ 'User: ' + message['content'] + '\\n\\n' }}{{ 'Assistant: ' + message['content'] + eos_token }}",
    "deepseek3-like": "{{ '<｜User｜>' + content + '<｜Assistant｜>' + content + '<｜end▁of▁sentence｜>' }}",
    "exaone3-like": "{{ '[|system|]' + content + '[|endofturn|]\\n' + '[|assistant|]' }}",
    "rwkv-world-like": "{{- 'User: ' + message['content']|trim + '\\n\\n' -}}",
    "granite-like": "{{ '<|start_of_role|>' + message['role'] + '<|end_of_role|>' }}",
    "gigachat-like": "{{ message['role'] + additional_special_tokens[0] + message['content'] + additional_special_tokens[1] }}",
    "megrez-like": "{{ '<|role_start|>' + message['role'] + '<|role_end|>' }}",
    "unknown": "{{ message['content'] }}",
}



def gguf_chat_template(path):
    """tokenizer.chat_template of a GGUF file (found by its key; a string value)."""
    import struct
    data = open(path, "rb").read()
    key = b"tokenizer.chat_template"
    at = data.find(struct.pack("<Q", len(key)) + key)
    if at < 0:
        return None
    at += 8 + len(key)
    vtype, n = struct.unpack_from("<IQ", data, at)
    assert vtype == 8
    return data[at + 12:at + 12 + n].decode("utf-8")


model_texts = {}
for model in ("phi3-tiny.gguf",):
    path = os.path.join(here, "../../../../shared/models/arch", model)
    if os.path.exists(path):
        model_texts[f"model:{model}"] = gguf_chat_template(path)
detect_texts.update(model_texts)

out = {"llama_cpp": "c392e50", "conversations": conversations, "builtin": {}, "detect": {}}
for name in builtin_names():
    cases = {}
    for conv_name, conv in conversations.items():
        for add_ass in (True, False):
            cases[f"{conv_name}/{'gen' if add_ass else 'nogen'}"] = apply(name, conv, add_ass)
    out["builtin"][name] = cases
for label, text in detect_texts.items():
    got = apply(text, conversations["multi_turn"], True)
    detected = None
    if got is not None:
        for name, cases in out["builtin"].items():
            if cases["multi_turn/gen"] == got:
                detected = name
                break
    out["detect"][label] = {"template": text, "output": got, "same_as": detected}

with open(os.path.join(here, "chat_golden.json"), "w", encoding="utf-8") as f:
    json.dump(out, f, ensure_ascii=False, indent=1, sort_keys=True)
    f.write("\n")
print(f"{len(out['builtin'])} templates, {len(out['detect'])} detection cases")
