from gpuscope._cli import main

main()
