# Sourced by tests/test_bad_inputs.sh: more corrupt weights and sharded indexes (issue 7).
# Uses fresh, st_edit, check, P from there.

# raw_header_py FILE PYEXPR: rewrites the header JSON text with a Python expression of h (the
# header text, str) — for headers json.dumps cannot write (duplicate keys, control characters).
raw_header_py() {
    python3 -c 'import struct,sys
p,expr=sys.argv[1:3]; b=open(p,"rb").read(); n=struct.unpack("<Q",b[:8])[0]
h=b[8:8+n].decode(); t=eval(expr).encode(); open(p,"wb").write(struct.pack("<Q",len(t))+t+b[8+n:])' "$@"
}

d="$(fresh name_newline)"
raw_header_py "$d/model.safetensors" 'h.replace("\"model.norm.weight\":{\"dtype\":\"F32\"", "\"model.norm\\nweight\":{\"dtype\":\"I8\"")'
check "tensor name with a newline in the error (one line)" 'model\.norm\?weight.*I8' -m "$d" "${P[@]}"

d="$(fresh dup_tensor)"
raw_header_py "$d/model.safetensors" 'h.rstrip()[:-1] + ",\"model.norm.weight\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}}"'
check "duplicate tensor name in the header" 'model\.safetensors.*(duplicate|model\.norm\.weight)' -m "$d" "${P[@]}"

d="$(fresh ndim5)"
st_edit "$d/model.safetensors" set_shape model.norm.weight 1,1,1,1,64
check "tensor with 5 dimensions" 'model\.safetensors.*model\.norm\.weight.*dimensions' -m "$d" "${P[@]}"

d="$(fresh shape_neg)"
st_edit "$d/model.safetensors" set_shape model.norm.weight -64
check "negative shape" 'model\.safetensors.*model\.norm\.weight.*shape' -m "$d" "${P[@]}"

d="$(fresh shape_huge)"
st_edit "$d/model.safetensors" set_shape model.norm.weight 4294967296,4294967296,4294967296
check "shape whose product overflows" 'model\.safetensors.*model\.norm\.weight.*too large' -m "$d" "${P[@]}"

d="$(fresh dtype_f16_span)"
st_edit "$d/model.safetensors" set_dtype model.norm.weight F16
check "dtype F16 on F32 bytes (span mismatch)" 'model\.safetensors.*model\.norm\.weight.*F16' -m "$d" "${P[@]}"

d="$(fresh dtype_num)"
raw_header_py "$d/model.safetensors" 'h.replace("\"dtype\":\"F32\"", "\"dtype\":32", 1)'
check "dtype not a string" 'model\.safetensors.*dtype' -m "$d" "${P[@]}"

d="$(fresh offsets3)"
raw_header_py "$d/model.safetensors" 'h.replace("\"data_offsets\":[0,131072]", "\"data_offsets\":[0,131072,5]", 1)'
check "data_offsets with 3 numbers" 'model\.safetensors.*model\.embed_tokens\.weight.*data_offsets' -m "$d" "${P[@]}"

d="$(fresh offsets_frac)"
raw_header_py "$d/model.safetensors" 'h.replace("\"data_offsets\":[0,131072]", "\"data_offsets\":[0.5,131072]", 1)'
check "fractional data_offsets" 'model\.safetensors.*model\.embed_tokens\.weight.*data_offsets' -m "$d" "${P[@]}"

d="$(fresh header_nul)"
raw_header_py "$d/model.safetensors" 'h[:10] + "\0" + h[11:]'
check "NUL byte inside the header JSON" 'model\.safetensors' -m "$d" "${P[@]}"

d="$(fresh zero_bytes)"
python3 -c 'import sys; open(sys.argv[1],"wb").write(bytes(1045016))' "$d/model.safetensors"
check "model.safetensors all zero bytes" 'model\.safetensors' -m "$d" "${P[@]}"

# sharded checkpoints
d="$(fresh shard_trunc)"
st_edit "$d/model.safetensors" split model.layers.2.mlp.up_proj.weight model-00002-of-00002.safetensors
st_edit "$d/model-00002-of-00002.safetensors" truncate 200
check "truncated shard" 'model-00002-of-00002\.safetensors' -m "$d" "${P[@]}"

d="$(fresh shard_escape)"
st_edit "$d/model.safetensors" split model.layers.2.mlp.up_proj.weight model-00002-of-00002.safetensors
python3 -c 'import json,sys
p=sys.argv[1]; j=json.load(open(p)); j["weight_map"]["model.layers.2.mlp.up_proj.weight"]="../../etc/passwd"; json.dump(j,open(p,"w"))' \
    "$d/model.safetensors.index.json"
check "index naming a shard outside the model folder" 'index\.json.*outside the model folder' -m "$d" "${P[@]}"

d="$(fresh shard_num)"
st_edit "$d/model.safetensors" split model.layers.2.mlp.up_proj.weight model-00002-of-00002.safetensors
python3 -c 'import json,sys
p=sys.argv[1]; j=json.load(open(p)); j["weight_map"]["model.norm.weight"]=7; json.dump(j,open(p,"w"))' \
    "$d/model.safetensors.index.json"
check "index weight_map value not a file name" 'index\.json.*model\.norm\.weight.*not a file name' -m "$d" "${P[@]}"

d="$(fresh index_nomap)"
st_edit "$d/model.safetensors" split model.layers.2.mlp.up_proj.weight model-00002-of-00002.safetensors
echo '{"metadata": {}, "weight_map": ["model-rest.safetensors"]}' >"$d/model.safetensors.index.json"
check "index weight_map not an object" 'index\.json.*weight_map' -m "$d" "${P[@]}"

d="$(fresh index_empty)"
st_edit "$d/model.safetensors" split model.layers.2.mlp.up_proj.weight model-00002-of-00002.safetensors
: >"$d/model.safetensors.index.json"
check "index empty file" 'index\.json' -m "$d" "${P[@]}"

d="$(fresh shard_wrong)"
st_edit "$d/model.safetensors" split model.layers.2.mlp.up_proj.weight model-00002-of-00002.safetensors
python3 -c 'import json,sys
p=sys.argv[1]; j=json.load(open(p)); j["weight_map"]["model.layers.2.mlp.up_proj.weight"]="model-rest.safetensors"; json.dump(j,open(p,"w"))' \
    "$d/model.safetensors.index.json"
check "index pointing a tensor at the wrong shard" 'model-rest\.safetensors.*model\.layers\.2\.mlp\.up_proj\.weight' -m "$d" "${P[@]}"
