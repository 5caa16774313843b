# bash completion for penny(1).  The option tables inside the binary are the
# source of truth: this script asks "penny __complete [CMD]" for them.
_penny()
{
	local cur prev cmd i line opts
	COMPREPLY=()
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD-1]}
	cmd=
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		-*) ;;
		*) cmd=${COMP_WORDS[i]}; break ;;
		esac
	done
	if [[ -z $cmd ]]; then
		COMPREPLY=($(compgen -W "$(penny __complete 2>/dev/null) --version --help" -- "$cur"))
		return
	fi
	if [[ $cmd == help ]]; then
		COMPREPLY=($(compgen -W "$(penny __complete 2>/dev/null)" -- "$cur"))
		return
	fi
	# value of the previous option: its choices, or files for FILE/DIR values
	# (lines are "long short arg range choices"; "-" is an empty field)
	while IFS=$'\t' read -r long short arg range choices; do
		if [[ $prev == "$long" || $prev == "$short" ]]; then
			[[ $arg == - ]] && break
			if [[ -n $choices ]]; then
				COMPREPLY=($(compgen -W "$choices" -- "$cur"))
			elif [[ $arg == *FILE* || $arg == *DIR* ]]; then
				COMPREPLY=($(compgen -f -- "$cur"))
			fi
			return
		fi
	done < <(penny __complete "$cmd" 2>/dev/null)
	if [[ $cur == -* ]]; then
		opts=$(penny __complete "$cmd" 2>/dev/null | cut -f1,2 | tr '\t' ' ' | sed 's/ -$//')
		COMPREPLY=($(compgen -W "$opts" -- "$cur"))
	fi
}
complete -F _penny penny
