# Sourced by tests/test_bad_inputs.sh: config.json values that contradict the weights or the
# tokenizer, and more malformed configs (issue 7).

d="$(fresh cfg_layers6)"
cfg_set "$d/config.json" num_hidden_layers 6
check "num_hidden_layers 6 (weights have 5)" 'model\.layers\.5\.' -m "$d" "${P[@]}"

d="$(fresh cfg_kv8)"
cfg_set "$d/config.json" num_key_value_heads 8
check "num_key_value_heads 8 (weights have 4)" 'self_attn\.k_proj\.weight.*config says' -m "$d" "${P[@]}"

d="$(fresh cfg_hd)"
cfg_set "$d/config.json" head_dim 16
check "head_dim 16 (weights have 8)" 'self_attn\.q_proj\.weight.*config says' -m "$d" "${P[@]}"

d="$(fresh cfg_hidden128)"
cfg_set "$d/config.json" hidden_size 128
check "hidden_size 128 (weights have 64)" 'model\.embed_tokens\.weight.*config says' -m "$d" "${P[@]}"

d="$(fresh cfg_vocab1024)"
cfg_set "$d/config.json" vocab_size 1024
check "vocab_size 1024 (weights have 512)" 'model\.embed_tokens\.weight.*config says' -m "$d" "${P[@]}"

if [ -f "$SHARED/models/llama2-tokenizer/tokenizer.model" ]; then
    d="$(fresh tok_bigger)"
    cp "$SHARED/models/llama2-tokenizer/tokenizer.model" "$d/tokenizer.model"
    check "tokenizer with 32000 pieces for vocab_size 512" 'tokenizer\.model.*vocab_size' -m "$d" "${P[@]}"
fi

d="$(fresh cfg_eos)"
cfg_set "$d/config.json" eos_token_id '[]'
check "eos_token_id empty list" 'config\.json.*eos_token_id' -m "$d" "${P[@]}"

d="$(fresh cfg_eps_huge)"
cfg_set "$d/config.json" rms_norm_eps 1e300
check "rms_norm_eps 1e300 (overflows float)" 'config\.json.*rms_norm_eps' -m "$d" "${P[@]}"

d="$(fresh cfg_theta_str)"
cfg_set "$d/config.json" rope_theta '"10000"'
check "rope_theta a string" 'config\.json.*rope_theta' -m "$d" "${P[@]}"

d="$(fresh cfg_rope_dyn)"
cfg_set "$d/config.json" rope_scaling '{"type": "dynamic", "factor": 2}'
check "rope_scaling dynamic (unsupported)" 'config\.json.*rope_scaling.*dynamic' -m "$d" "${P[@]}"

d="$(fresh cfg_rope_factor)"
cfg_set "$d/config.json" rope_scaling '{"type": "linear", "factor": 0.5}'
check "rope_scaling factor 0.5" 'config\.json.*rope_scaling\.factor' -m "$d" "${P[@]}"

d="$(fresh cfg_heads_big)"
cfg_set "$d/config.json" num_attention_heads 3000000000
check "num_attention_heads beyond int" 'config\.json.*num_attention_heads' -m "$d" "${P[@]}"

d="$(fresh cfg_key_newline)"
printf '{"hidden_size": 64, "intermediate_size": 172, "num_hidden_layers": 5, "num_attention_heads": 8,\n "vocab_size": 512, "num_key_value_heads": "4\\n4"}' >"$d/config.json"
check "config value with an escaped newline (one line)" 'config\.json.*num_key_value_heads' -m "$d" "${P[@]}"

d="$(fresh cfg_trailing)"
printf '{"hidden_size": 64} {"x": 1}' >"$d/config.json"
check "config.json with trailing data" 'config\.json.*malformed' -m "$d" "${P[@]}"

d="$(fresh empty_dir)"
rm -f "$d"/*
check "empty model folder" 'config\.json' -m "$d" "${P[@]}"
