# bash completion for space, the command-line client of spaced (installed by meson as
# share/bash-completion/completions/space). Its lists of commands are zsh's too
# (completion/space.zsh sources this file and stops before the bash part). Commands and subcommands are listed here; flags
# come from `space ... --help`; sandbox ids from `space ps -q` (so they need a reachable
# spaced and a key, as space itself does).

_space_commands="health version capabilities ps inspect stats exec logs attach cp template sandbox snapshot restore fork op key project node audit policy approvals network secret grant"

_space_subcommands() {
        case $1 in
        template) echo "ls get build import rm prune" ;;
        sandbox) echo "create ls get set stop start pause resume rm" ;;
        snapshot) echo "create ls get rm export import" ;;
        op | operation) echo "get ls" ;;
        key) echo "create ls rm" ;;
        project) echo "create ls" ;;
        node) echo "ls" ;;
        policy) echo "ls get apply rm test" ;;
        approvals) echo "ls approve deny" ;;
        secret) echo "create ls rm bind bindings unbind" ;;
        grant) echo "create ls rm" ;;
        network) echo "get set profiles" ;;
        esac
}

# Does the command (and subcommand) take a sandbox id as its first argument?
_space_takes_sandbox() {
        case "$1 $2" in
        "exec "* | "logs "* | "attach "* | "inspect "* | "stats "* | "restore "* | "fork "*) return 0 ;;
        "sandbox get" | "sandbox set" | "sandbox stop" | "sandbox start" | "sandbox pause" | "sandbox resume" | "sandbox rm") return 0 ;;
        "snapshot create" | "snapshot ls") return 0 ;;
        "network get" | "network set") return 0 ;;
        esac
        return 1
}

# zsh reads the lists above (completion/space.zsh) and stops here.
if [[ -n ${ZSH_VERSION-} ]]; then
        return 0
fi

_space() {
        local cur=${COMP_WORDS[COMP_CWORD]}
        local cmd="" sub="" npos=0 i w
        COMPREPLY=()
        for ((i = 1; i < COMP_CWORD; i++)); do
                w=${COMP_WORDS[i]}
                case $w in
                --) return 0 ;; # the remote command of exec: leave it to the default
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

        if [[ $cur == -* ]]; then
                local help
                if [[ -z $cmd ]]; then
                        help=$(space --help 2>/dev/null)
                else
                        help=$(space $cmd $sub --help 2>/dev/null)
                fi
                COMPREPLY=($(compgen -W "$(grep -oE -- '--[a-z][a-z-]*' <<<"$help" | sort -u)" -- "$cur"))
                return 0
        fi
        if [[ -z $cmd ]]; then
                COMPREPLY=($(compgen -W "$_space_commands" -- "$cur"))
                return 0
        fi
        if [[ -z $sub && -n $(_space_subcommands "$cmd") ]]; then
                COMPREPLY=($(compgen -W "$(_space_subcommands "$cmd")" -- "$cur"))
                return 0
        fi
        if ((npos == 0)) && _space_takes_sandbox "$cmd" "$sub"; then
                COMPREPLY=($(compgen -W "$(space ps -q 2>/dev/null)" -- "$cur"))
                return 0
        fi
        if [[ $cmd == cp ]]; then
                COMPREPLY=($(compgen -f -- "$cur"))
        fi
        return 0
}

complete -F _space space
