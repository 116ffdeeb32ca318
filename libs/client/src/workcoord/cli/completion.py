"""``workcoord completion bash|zsh|fish``: a static completion script derived from the parser.

The script knows the command tree (subcommands and each command's flags); it does not complete
flag values. Install with ``source <(workcoord completion bash)`` (or ``zsh``), or for fish
``workcoord completion fish > ~/.config/fish/completions/workcoord.fish``.
"""

from __future__ import annotations

import argparse
import shlex

from workcoord.cli.common import EXIT_OK

__all__ = ["command_tree", "register", "render"]


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``completion bash|zsh|fish``."""
    completion = commands.add_parser("completion", help="print a shell completion script")
    completion.add_argument("shell", choices=["bash", "zsh", "fish"])
    completion.set_defaults(handler=_completion)


def command_tree(parser: argparse.ArgumentParser) -> dict[str, list[str]]:
    """Each command path (``""``, ``"admin"``, ``"admin keys"``…) → the words that may follow."""
    tree: dict[str, list[str]] = {}

    def walk(node: argparse.ArgumentParser, path: str) -> None:
        words: list[str] = []
        for action in node._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    words.append(name)
                    walk(child, f"{path} {name}".strip())
            else:
                words.extend(action.option_strings)
        tree[path] = words

    walk(parser, "")
    return tree


def render(shell: str, parser: argparse.ArgumentParser) -> str:
    """The completion script for ``shell``."""
    tree = command_tree(parser)
    if shell == "fish":
        return _render_fish(tree)
    cases = "\n".join(
        f"        {shlex.quote(path)}) echo {shlex.quote(' '.join(words))} ;;"
        for path, words in sorted(tree.items())
    )
    # A case statement rather than an associative array: the same text works in bash and zsh.
    words_function = f"""_workcoord_words() {{
    case "$1" in
{cases}
    esac
}}
"""
    if shell == "bash":
        return (
            "# workcoord bash completion: source <(workcoord completion bash)\n"
            + words_function
            + """_workcoord() {
    local cur="${COMP_WORDS[COMP_CWORD]}" wc_path="" next i
    for ((i = 1; i < COMP_CWORD; i++)); do
        case "${COMP_WORDS[i]}" in -*) continue ;; esac
        next="${wc_path:+$wc_path }${COMP_WORDS[i]}"
        if [[ -n "$(_workcoord_words "$next")" ]]; then wc_path="$next"; fi
    done
    COMPREPLY=($(compgen -W "$(_workcoord_words "$wc_path")" -- "$cur"))
}
complete -F _workcoord workcoord
"""
        )
    return (
        "#compdef workcoord\n# workcoord zsh completion: source <(workcoord completion zsh)\n"
        + words_function
        + """_workcoord() {
    local wc_path="" next i
    for ((i = 2; i < CURRENT; i++)); do
        [[ "${words[i]}" == -* ]] && continue
        next="${wc_path:+$wc_path }${words[i]}"
        if [[ -n "$(_workcoord_words "$next")" ]]; then wc_path="$next"; fi
    done
    compadd -- ${=$(_workcoord_words "$wc_path")}
}
compdef _workcoord workcoord
"""
    )


def _render_fish(tree: dict[str, list[str]]) -> str:
    # fish has no `case` fallthrough syntax shared with bash: a `switch` of its own.
    cases = "\n".join(
        f"        case {_fish_quote(path)}\n            echo {_fish_quote(' '.join(words))}"
        for path, words in sorted(tree.items())
    )
    return f"""# workcoord fish completion: workcoord completion fish | source
function __workcoord_words
    switch "$argv[1]"
{cases}
    end
end
function __workcoord_complete
    set -l wc_path ""
    for word in (commandline -opc)[2..-1]
        string match -q -- '-*' $word; and continue
        set -l next $word
        test -n "$wc_path"; and set next "$wc_path $word"
        set -l found (__workcoord_words $next)
        test -n "$found"; and set wc_path $next
    end
    string split ' ' -- (__workcoord_words "$wc_path")
end
complete -c workcoord -f -a '(__workcoord_complete)'
"""


def _fish_quote(text: str) -> str:
    """``text`` as one fish word: single quotes, with ``\\`` and ``'`` escaped (fish's rules,
    not POSIX's)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _completion(args: argparse.Namespace) -> int:
    from workcoord.cli.main import build_parser  # the whole tree, built on demand

    print(render(args.shell, build_parser()), end="")
    return EXIT_OK
