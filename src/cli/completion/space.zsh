#compdef space
# zsh completion for space, the command-line client of spaced (installed by meson as
# share/zsh/site-functions/_space, where compinit finds it). The commands, subcommands and
# which of them take a sandbox id are the bash completion's lists (one list for both
# shells): that file is read for them, and stops before its bash part. Flags come from
# `space ... --help`, sandbox ids from `space ps -q`.

source "${SPACE_BASH_COMPLETION:-@BASH_COMPLETION@}" 2>/dev/null || return 1

local cmd="" sub="" w
integer npos=0 i
for ((i = 2; i < CURRENT; i++)); do
        w=${words[i]}
        case $w in
        --) return 1 ;; # the remote command of exec: not ours
        --url | --key) ((i++)); continue ;;
        -*) continue ;;
        esac
        if [[ -z $cmd ]]; then
                cmd=$w
        elif [[ -z $sub && -n $(_space_subcommands "$cmd") ]]; then
                sub=$w
        else
                ((npos++))
        fi
done

local cur=${words[CURRENT]}
if [[ $cur == -* ]]; then
        local help
        help=$(space ${cmd:+"$cmd"} ${sub:+"$sub"} --help 2>/dev/null)
        compadd -- ${(u)${(f)"$(grep -oE -- '--[a-z][a-z-]*' <<<"$help")"}}
        return
fi
if [[ -z $cmd ]]; then
        compadd -- ${=_space_commands}
        return
fi
if [[ -z $sub && -n $(_space_subcommands "$cmd") ]]; then
        compadd -- ${=$(_space_subcommands "$cmd")}
        return
fi
if ((npos == 0)) && _space_takes_sandbox "$cmd" "$sub"; then
        compadd -- ${(f)"$(space ps -q 2>/dev/null)"}
        return
fi
[[ $cmd == cp ]] && _files
