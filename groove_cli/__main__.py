from groove_cli.cli import main

main()
